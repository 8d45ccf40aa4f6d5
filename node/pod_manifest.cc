#include "node/pod_manifest.h"

#include <yaml-cpp/yaml.h>

#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/k8s_names.h"
#include "kubeapi/resource_validation.h"
#include "kubeapi/yaml_objects.h"
#include "node/claim_manifest.h"
#include "node/manifest_fields.h"
#include "node/pod_checks.h"
#include "node/quantity.h"

namespace devmgr::node {
namespace {

using devicemanager::Container;
using devicemanager::ContainerType;

// Reads one `resources.limits` or `resources.requests` map, keeping extended resources only. A
// name the API server refuses is refused here too: a pod with it could not exist, and a device
// resource misspelt ("gpu" for "example.com/gpu") would be dropped without a word.
absl::StatusOr<std::map<std::string, int64_t>> ReadCounts(const YAML::Node& node,
                                                          absl::string_view field) {
  std::map<std::string, int64_t> counts;
  if (!IsPresent(node)) return counts;
  if (!node.IsMap()) return FieldError(field, "must be a map of resource name to quantity");
  for (const auto& item : node) {
    if (!item.first.IsScalar()) return FieldError(field, "resource names must be strings");
    const std::string resource = item.first.Scalar();
    const std::string where = absl::StrCat(field, "[\"", resource, "\"]");
    if (const std::string error = ResourceNameError(resource); !error.empty()) {
      return FieldError(where, absl::StrCat("Invalid value: \"", resource, "\": ", error));
    }
    if (!IsExtendedResourceName(resource)) continue;  // cpu, memory, ...
    if (!item.second.IsScalar()) return FieldError(where, "must be a quantity");
    absl::StatusOr<int64_t> count = ParseDeviceCount(item.second.Scalar());
    if (!count.ok()) return FieldError(where, count.status().message());
    counts[resource] = *count;
  }
  return counts;
}

// ReadContainer reads one container; its claims (resources.claims) go to `claims`.
absl::StatusOr<Container> ReadContainer(const YAML::Node& node, absl::string_view field, bool init,
                                        const dra::Pod& pod, dra::Container& claims) {
  if (!node.IsMap()) return FieldError(field, "must be a container object");
  Container container;
  absl::StatusOr<std::string> name = ReadString(node["name"], absl::StrCat(field, ".name"));
  if (!name.ok()) return name.status();
  if (name->empty()) return FieldError(absl::StrCat(field, ".name"), "is required");
  // As the API server's validateContainers: a DNS-1123 label.
  if (absl::Status valid = CheckLabelName(absl::StrCat(field, ".name"), *name); !valid.ok()) {
    return valid;
  }
  container.name = *std::move(name);

  absl::StatusOr<std::string> restart_policy =
      ReadString(node["restartPolicy"], absl::StrCat(field, ".restartPolicy"));
  if (!restart_policy.ok()) return restart_policy.status();
  if (!restart_policy->empty()) {
    if (!init || *restart_policy != "Always") {
      return FieldError(
          absl::StrCat(field, ".restartPolicy"),
          init ? "only \"Always\" is allowed (a sidecar)" : "is allowed only on init containers");
    }
  }
  container.type = !init                     ? ContainerType::kRegular
                   : restart_policy->empty() ? ContainerType::kInit
                                             : ContainerType::kSidecar;
  claims.restart_policy = *std::move(restart_policy);

  const YAML::Node resources = node["resources"];
  if (IsPresent(resources) && !resources.IsMap()) {
    return FieldError(absl::StrCat(field, ".resources"), "must be an object");
  }
  const std::string limits_field = absl::StrCat(field, ".resources.limits");
  const std::string requests_field = absl::StrCat(field, ".resources.requests");
  absl::StatusOr<std::map<std::string, int64_t>> limits =
      ReadCounts(IsMapNode(resources) ? resources["limits"] : YAML::Node(), limits_field);
  if (!limits.ok()) return limits.status();
  absl::StatusOr<std::map<std::string, int64_t>> requests =
      ReadCounts(IsMapNode(resources) ? resources["requests"] : YAML::Node(), requests_field);
  if (!requests.ok()) return requests.status();
  // Extended resources cannot be overcommitted: a request needs an equal limit; a limit alone
  // implies the request.
  for (const auto& [resource, count] : *requests) {
    const auto limit = limits->find(resource);
    const std::string where = absl::StrCat(requests_field, "[\"", resource, "\"]");
    if (limit == limits->end()) {
      return FieldError(where, "a limit must be set for a resource that cannot be overcommitted");
    }
    if (limit->second != count) {
      return FieldError(where, absl::StrCat("must equal the limit (", limit->second, ")"));
    }
  }
  container.devices = *std::move(limits);
  claims.requested_resources = RequestedResources(container);

  claims.name = container.name;
  absl::StatusOr<std::vector<dra::ContainerClaim>> used =
      ReadContainerClaims(IsMapNode(resources) ? resources["claims"] : YAML::Node(),
                          absl::StrCat(field, ".resources.claims"), pod);
  if (!used.ok()) return used.status();
  claims.claims = *std::move(used);
  return container;
}

absl::Status ReadContainers(const YAML::Node& node, absl::string_view field, bool init,
                            std::vector<Container>& out, std::set<std::string>& names,
                            dra::Pod& pod) {
  if (!IsPresent(node)) return absl::OkStatus();
  if (!node.IsSequence()) return FieldError(field, "must be a list of containers");
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string where = absl::StrCat(field, "[", i, "]");
    std::vector<dra::Container>& claims = init ? pod.init_containers : pod.containers;
    absl::StatusOr<Container> container =
        ReadContainer(node[i], where, init, pod, claims.emplace_back());
    if (!container.ok()) return container.status();
    if (!names.insert(container->name).second) {
      return FieldError(absl::StrCat(where, ".name"),
                        absl::StrCat("duplicate container name \"", container->name, "\""));
    }
    out.push_back(*std::move(container));
  }
  return absl::OkStatus();
}

absl::StatusOr<PodManifest> ReadPod(const YAML::Node& root) {
  if (!IsMapNode(root)) return absl::InvalidArgumentError("the manifest must be a Pod object");
  absl::StatusOr<std::string> kind = ReadString(root["kind"], "kind");
  if (!kind.ok()) return kind.status();
  if (!kind->empty() && *kind != "Pod") {
    return FieldError("kind", absl::StrCat("is \"", *kind, "\"; only a Pod can be admitted"));
  }

  PodManifest manifest;
  const YAML::Node metadata = root["metadata"];
  if (!IsMapNode(metadata)) return FieldError("metadata", "is required");
  for (auto [key, target] :
       {std::pair{"uid", &manifest.pod.uid}, std::pair{"name", &manifest.pod.name},
        std::pair{"namespace", &manifest.pod.namespace_name}}) {
    absl::StatusOr<std::string> value = ReadString(metadata[key], absl::StrCat("metadata.", key));
    if (!value.ok()) return value.status();
    *target = *std::move(value);
  }
  if (manifest.pod.name.empty()) return FieldError("metadata.name", "is required");
  if (manifest.pod.namespace_name.empty()) manifest.pod.namespace_name = "default";
  // As the API server's ValidatePodName and ValidateNamespaceName.
  if (absl::Status valid = CheckPodName("metadata.name", manifest.pod.name); !valid.ok()) {
    return valid;
  }
  if (absl::Status valid = CheckLabelName("metadata.namespace", manifest.pod.namespace_name);
      !valid.ok()) {
    return valid;
  }
  if (manifest.pod.uid.empty()) {
    manifest.pod.uid = NewUid();
    manifest.generated_uid = true;
  }

  dra::Pod& claims = manifest.claims.pod;
  claims.uid = manifest.pod.uid;
  claims.namespace_name = manifest.pod.namespace_name;
  claims.name = manifest.pod.name;

  const YAML::Node spec = root["spec"];
  if (!IsMapNode(spec)) return FieldError("spec", "is required");
  if (absl::Status status = ReadPodResourceClaims(spec, root["status"], claims); !status.ok()) {
    return status;
  }
  std::set<std::string> names;
  if (absl::Status status = ReadContainers(spec["initContainers"], "spec.initContainers", true,
                                           manifest.pod.init_containers, names, claims);
      !status.ok()) {
    return status;
  }
  if (absl::Status status = ReadContainers(spec["containers"], "spec.containers", false,
                                           manifest.pod.containers, names, claims);
      !status.ok()) {
    return status;
  }
  if (manifest.pod.containers.empty()) return FieldError("spec.containers", "is required");
  absl::StatusOr<std::optional<dra::PodExtendedResourceClaimStatus>> extended =
      ReadExtendedResourceClaimStatus(root["status"]);
  if (!extended.ok()) return extended.status();
  if (extended->has_value()) {
    for (const dra::ContainerExtendedResourceRequest& mapping : (*extended)->request_mappings) {
      if (!names.contains(mapping.container_name)) {
        return FieldError(
            "status.extendedResourceClaimStatus.requestMappings",
            absl::StrCat("container \"", mapping.container_name, "\" is not in the pod"));
      }
      manifest.pod.dra_resource_mappings.push_back({mapping.container_name, mapping.resource_name});
    }
  }
  claims.extended_resource_claim_status = *std::move(extended);
  return manifest;
}

// ReadClaims reads the ResourceClaim documents that came with `manifest`'s pod into it. A claim
// without a namespace is in the pod's.
absl::Status ReadClaims(const std::vector<std::pair<size_t, YAML::Node>>& documents,
                        const structured::Features& features, PodManifest& manifest) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& [index, document] : documents) {
    const std::string where = absl::StrCat("document ", index, " (ResourceClaim)");
    absl::StatusOr<std::string> api_version =
        ReadString(document["apiVersion"], absl::StrCat(where, ": apiVersion"));
    if (!api_version.ok()) return api_version.status();
    if (absl::c_find(kResourceClaimApiVersions, *api_version) ==
        std::end(kResourceClaimApiVersions)) {
      return FieldError(absl::StrCat(where, ": apiVersion"),
                        absl::StrCat("\"", *api_version, "\" is not one of ",
                                     absl::StrJoin(kResourceClaimApiVersions, ", ")));
    }
    absl::StatusOr<dra::ResourceClaim> claim = ReadResourceClaim(document);
    if (!claim.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", claim.status().message()));
    }
    const std::string& pod_namespace = manifest.pod.namespace_name;
    if (claim->namespace_name.empty()) claim->namespace_name = pod_namespace;
    if (claim->namespace_name != pod_namespace) {
      return FieldError(absl::StrCat(where, ": metadata.namespace"),
                        absl::StrCat("is \"", claim->namespace_name, "\"; the pod is in \"",
                                     pod_namespace, "\""));
    }
    if (!seen.insert({claim->namespace_name, claim->name}).second) {
      return FieldError(absl::StrCat(where, ": metadata.name"),
                        absl::StrCat("ResourceClaim \"", claim->name, "\" is given twice"));
    }
    if (!claim->allocation.has_value()) {
      // Its requests, for a node that allocates claims itself.
      absl::StatusOr<nlohmann::json> object = kubeapi::YamlToJson(document);
      absl::StatusOr<kubeapi::ResourceClaim> whole =
          object.ok()
              ? kubeapi::DecodeValidResourceClaim(*object, structured::NewSelectorCost{features})
              : absl::StatusOr<kubeapi::ResourceClaim>(object.status());
      if (!whole.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": ", whole.status().message()));
      }
      whole->metadata.namespace_name = claim->namespace_name;
      whole->metadata.uid = claim->uid;
      manifest.claims.unallocated.push_back(*std::move(whole));
    }
    manifest.claims.claims.push_back(*std::move(claim));
  }
  return absl::OkStatus();
}

absl::StatusOr<PodManifest> ReadStream(const std::vector<YAML::Node>& documents,
                                       const structured::Features& features) {
  std::optional<YAML::Node> pod;
  std::vector<std::pair<size_t, YAML::Node>> claims;
  for (size_t i = 0; i < documents.size(); ++i) {
    const YAML::Node& document = documents[i];
    if (!IsPresent(document)) continue;  // an empty document ("---" twice)
    absl::StatusOr<std::string> kind =
        IsMapNode(document) ? ReadString(document["kind"], "kind") : std::string();
    if (!kind.ok()) return kind.status();
    if (*kind == "ResourceClaim") {
      claims.emplace_back(i, document);
      continue;
    }
    if (pod.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "document ", i, ": the manifest holds one Pod, and only ResourceClaims beside it"));
    }
    pod = document;
  }
  if (!pod.has_value()) return absl::InvalidArgumentError("the manifest must be a Pod object");
  absl::StatusOr<PodManifest> manifest = ReadPod(*pod);
  if (!manifest.ok()) return manifest;
  if (absl::Status read = ReadClaims(claims, features, *manifest); !read.ok()) return read;
  return manifest;
}

// The most documents a manifest stream may hold: a pod and its claims.
constexpr size_t kMaxDocuments = 256;

}  // namespace

std::vector<std::string> RequestedResources(const devicemanager::Container& container) {
  std::vector<std::string> requested;
  for (const auto& [resource, count] : container.devices) {
    if (count > 0) requested.push_back(resource);
  }
  return requested;
}

absl::StatusOr<PodManifest> ParsePodManifest(absl::string_view text,
                                             const structured::Features& features) {
  const std::vector<std::string> parts = kubeapi::SplitYamlDocuments(text);
  if (parts.size() > kMaxDocuments) {
    return absl::InvalidArgumentError(
        absl::StrCat("the manifest holds ", parts.size(), " documents, more than ", kMaxDocuments));
  }
  // yaml-cpp reports errors by throwing; none may leave this function.
  try {
    std::vector<YAML::Node> documents;
    documents.reserve(parts.size());
    kubeapi::YamlBudget budget;
    for (size_t i = 0; i < parts.size(); ++i) {
      documents.push_back(YAML::Load(parts[i]));
      if (absl::Status shape = kubeapi::CheckYamlShape(documents.back(), budget); !shape.ok()) {
        return parts.size() == 1 ? shape
                                 : absl::InvalidArgumentError(
                                       absl::StrCat("document ", i, ": ", shape.message()));
      }
    }
    return ReadStream(documents, features);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("not valid YAML or JSON: ", kubeapi::YamlErrorText(e)));
  }
}

}  // namespace devmgr::node
