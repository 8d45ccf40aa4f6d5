#include "node/cluster_claim_source.h"

#include <yaml-cpp/yaml.h>

#include "absl/strings/str_cat.h"
#include "node/claim_manifest.h"

namespace devmgr::node {

absl::StatusOr<dra::ResourceClaim> ClusterClaimSource::GetClaim(const std::string& namespace_name,
                                                                const std::string& name) {
  absl::StatusOr<nlohmann::json> object = client_.GetResourceClaim(namespace_name, name);
  if (!object.ok()) return object.status();
  // JSON is YAML: the manifest reader takes the server's object as it is.
  YAML::Node document;
  try {
    document = YAML::Load(object->dump());
  } catch (const YAML::Exception& error) {
    return absl::InvalidArgumentError(
        absl::StrCat("ResourceClaim ", namespace_name, "/", name, ": ", error.what()));
  }
  absl::StatusOr<dra::ResourceClaim> claim = ReadResourceClaim(document);
  if (!claim.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ResourceClaim ", namespace_name, "/", name, ": ", claim.status().message()));
  }
  if (claim->namespace_name.empty()) claim->namespace_name = namespace_name;
  return claim;
}

}  // namespace devmgr::node
