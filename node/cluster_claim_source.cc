#include "node/cluster_claim_source.h"

#include <yaml-cpp/yaml.h>

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "node/claim_manifest.h"

namespace devmgr::node {
namespace {

// TakeParameters: each allocated configuration's opaque parameters that are an object, taken out
// of `claim` (an empty object left in their place), null for the others. The reader goes through
// YAML, which would turn an integer past int64's range into a double and refuse parameters
// nested deeper than its limit; the server's JSON holds them exactly, and the driver gets them so.
std::vector<nlohmann::json> TakeParameters(nlohmann::json& claim) {
  std::vector<nlohmann::json> taken;
  const nlohmann::json::json_pointer at("/status/allocation/devices/config");
  if (!claim.contains(at) || !claim[at].is_array()) return taken;
  for (nlohmann::json& config : claim[at]) {
    nlohmann::json* parameters = nullptr;
    if (config.is_object() && config.contains("opaque") && config["opaque"].is_object() &&
        config["opaque"].contains("parameters") && config["opaque"]["parameters"].is_object()) {
      parameters = &config["opaque"]["parameters"];
    }
    taken.push_back(parameters == nullptr ? nlohmann::json() : std::move(*parameters));
    if (parameters != nullptr) *parameters = nlohmann::json::object();
  }
  return taken;
}

}  // namespace

absl::StatusOr<dra::ResourceClaim> ClusterClaimSource::GetClaim(const std::string& namespace_name,
                                                                const std::string& name) {
  absl::StatusOr<nlohmann::json> object = client_.GetResourceClaim(namespace_name, name);
  if (!object.ok()) return object.status();
  std::vector<nlohmann::json> parameters = TakeParameters(*object);
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
  // The reader keeps the configurations in the server's order, one for each.
  for (size_t i = 0; i < parameters.size() && i < claim->allocation_config.size(); ++i) {
    if (!parameters[i].is_null()) claim->allocation_config[i].parameters = parameters[i].dump();
  }
  return claim;
}

}  // namespace devmgr::node
