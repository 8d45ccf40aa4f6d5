#include "node/pod_checks.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "common/k8s_names.h"
#include "node/manifest_fields.h"

namespace devmgr::node {

absl::Status CheckPodName(absl::string_view field, absl::string_view name) {
  return NameError(field, name, Dns1123SubdomainErrors(name));
}

absl::Status CheckLabelName(absl::string_view field, absl::string_view name) {
  return NameError(field, name, Dns1123LabelErrors(name));
}

std::string ResourceNameError(absl::string_view resource) {
  if (std::vector<std::string> errors = QualifiedNameErrors(resource); !errors.empty()) {
    return absl::StrJoin(errors, "; ");
  }
  if (!absl::StrContains(resource, '/')) {
    const bool standard = resource == "cpu" || resource == "memory" ||
                          resource == "ephemeral-storage" ||
                          absl::StartsWith(resource, "hugepages-");
    return standard ? "" : "must be a standard resource for containers";
  }
  if (absl::StrContains(resource, "kubernetes.io/") || IsExtendedResourceName(resource)) return "";
  return "doesn't follow extended resource name standard";
}

}  // namespace devmgr::node
