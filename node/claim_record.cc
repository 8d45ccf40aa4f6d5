#include "node/claim_record.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/json_depth.h"
#include "nlohmann/json.hpp"

namespace devmgr::node {
namespace {

using Json = nlohmann::json;

constexpr int kVersion = 1;

// Optional strings are written only when set.
void PutOptional(Json& object, const char* key, const std::optional<std::string>& value) {
  if (value.has_value()) object[key] = *value;
}
std::optional<std::string> GetOptional(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  return it->get<std::string>();
}

Json EncodeContainers(const std::vector<dra::Container>& containers) {
  Json list = Json::array();
  for (const dra::Container& container : containers) {
    Json claims = Json::array();
    for (const dra::ContainerClaim& claim : container.claims) {
      claims.push_back({{"name", claim.name}, {"request", claim.request}});
    }
    Json item = {{"name", container.name}, {"claims", std::move(claims)}};
    if (!container.restart_policy.empty()) item["restartPolicy"] = container.restart_policy;
    if (!container.requested_resources.empty()) {
      item["requestedResources"] = container.requested_resources;
    }
    list.push_back(std::move(item));
  }
  return list;
}

std::vector<dra::Container> DecodeContainers(const Json& list) {
  std::vector<dra::Container> containers;
  for (const Json& item : list) {
    dra::Container container;
    container.name = item.at("name").get<std::string>();
    // Records written before sidecars were kept have none.
    if (auto policy = item.find("restartPolicy"); policy != item.end()) {
      container.restart_policy = policy->get<std::string>();
    }
    for (const Json& claim : item.at("claims")) {
      container.claims.push_back(
          {claim.at("name").get<std::string>(), claim.at("request").get<std::string>()});
    }
    // Records written before extended-resource claims were read have none.
    if (auto requested = item.find("requestedResources"); requested != item.end()) {
      container.requested_resources = requested->get<std::vector<std::string>>();
    }
    containers.push_back(std::move(container));
  }
  return containers;
}

Json EncodePod(const dra::Pod& pod) {
  Json claims = Json::array();
  for (const dra::PodResourceClaim& claim : pod.resource_claims) {
    Json item = {{"name", claim.name}};
    PutOptional(item, "resourceClaimName", claim.resource_claim_name);
    PutOptional(item, "resourceClaimTemplateName", claim.resource_claim_template_name);
    claims.push_back(std::move(item));
  }
  Json statuses = Json::array();
  for (const dra::PodResourceClaimStatus& status : pod.resource_claim_statuses) {
    Json item = {{"name", status.name}};
    PutOptional(item, "resourceClaimName", status.resource_claim_name);
    statuses.push_back(std::move(item));
  }
  Json record = {{"uid", pod.uid},
                 {"namespace", pod.namespace_name},
                 {"name", pod.name},
                 {"resourceClaims", std::move(claims)},
                 {"resourceClaimStatuses", std::move(statuses)},
                 {"initContainers", EncodeContainers(pod.init_containers)},
                 {"containers", EncodeContainers(pod.containers)}};
  PutOptional(record, "podGroupName", pod.pod_group_name);
  if (pod.extended_resource_claim_status.has_value()) {
    Json mappings = Json::array();
    for (const dra::ContainerExtendedResourceRequest& mapping :
         pod.extended_resource_claim_status->request_mappings) {
      mappings.push_back({{"containerName", mapping.container_name},
                          {"resourceName", mapping.resource_name},
                          {"requestName", mapping.request_name}});
    }
    record["extendedResourceClaimStatus"] = {
        {"requestMappings", std::move(mappings)},
        {"resourceClaimName", pod.extended_resource_claim_status->resource_claim_name}};
  }
  return record;
}

dra::Pod DecodePod(const Json& item) {
  dra::Pod pod;
  pod.uid = item.at("uid").get<std::string>();
  pod.namespace_name = item.at("namespace").get<std::string>();
  pod.name = item.at("name").get<std::string>();
  for (const Json& claim : item.at("resourceClaims")) {
    pod.resource_claims.push_back({claim.at("name").get<std::string>(),
                                   GetOptional(claim, "resourceClaimName"),
                                   GetOptional(claim, "resourceClaimTemplateName")});
  }
  for (const Json& status : item.at("resourceClaimStatuses")) {
    pod.resource_claim_statuses.push_back(
        {status.at("name").get<std::string>(), GetOptional(status, "resourceClaimName")});
  }
  pod.pod_group_name = GetOptional(item, "podGroupName");
  if (auto extended = item.find("extendedResourceClaimStatus"); extended != item.end()) {
    dra::PodExtendedResourceClaimStatus status;
    status.resource_claim_name = extended->at("resourceClaimName").get<std::string>();
    for (const Json& mapping : extended->at("requestMappings")) {
      status.request_mappings.push_back({mapping.at("containerName").get<std::string>(),
                                         mapping.at("resourceName").get<std::string>(),
                                         mapping.at("requestName").get<std::string>()});
    }
    pod.extended_resource_claim_status = std::move(status);
  }
  pod.init_containers = DecodeContainers(item.at("initContainers"));
  pod.containers = DecodeContainers(item.at("containers"));
  return pod;
}

Json EncodeClaim(const dra::ResourceClaim& claim) {
  Json owners = Json::array();
  for (const dra::OwnerReference& owner : claim.owner_references) {
    owners.push_back({{"apiVersion", owner.api_version},
                      {"kind", owner.kind},
                      {"name", owner.name},
                      {"uid", owner.uid},
                      {"controller", owner.controller}});
  }
  Json allocation = nullptr;
  if (claim.allocation.has_value()) {
    allocation = Json::array();
    for (const dra::DeviceRequestAllocationResult& result : *claim.allocation) {
      Json item = {{"request", result.request},
                   {"driver", result.driver},
                   {"pool", result.pool},
                   {"device", result.device}};
      PutOptional(item, "shareID", result.share_id);
      if (result.admin_access) item["adminAccess"] = true;
      if (!result.consumed_capacity.empty()) item["consumedCapacity"] = result.consumed_capacity;
      if (!result.skip_node_operations.empty()) {
        item["skipNodeOperations"] = result.skip_node_operations;
      }
      allocation.push_back(std::move(item));
    }
  }
  Json reserved = Json::array();
  for (const dra::ResourceClaimConsumerReference& consumer : claim.reserved_for) {
    reserved.push_back({{"apiGroup", consumer.api_group},
                        {"resource", consumer.resource},
                        {"name", consumer.name},
                        {"uid", consumer.uid}});
  }
  Json out = {{"namespace", claim.namespace_name},
              {"name", claim.name},
              {"uid", claim.uid},
              {"ownerReferences", std::move(owners)},
              {"allocation", std::move(allocation)},
              {"reservedFor", std::move(reserved)}};
  PutOptional(out, "podClaimName", claim.pod_claim_name);
  if (!claim.allocation_config.empty()) {
    Json& configs = out["allocationConfig"] = Json::array();
    for (const dra::DeviceAllocationConfiguration& config : claim.allocation_config) {
      // The parameters are JSON text from a JSON object; anything else is kept as a string
      // rather than written as a record that does not parse.
      Json parameters = Json::parse(config.parameters, nullptr, false);
      if (parameters.is_discarded()) parameters = config.parameters;
      configs.push_back({{"source", config.source},
                         {"requests", config.requests},
                         {"opaque", {{"driver", config.driver}, {"parameters", parameters}}}});
    }
  }
  return out;
}

dra::ResourceClaim DecodeClaim(const Json& item) {
  dra::ResourceClaim claim;
  claim.namespace_name = item.at("namespace").get<std::string>();
  claim.name = item.at("name").get<std::string>();
  claim.uid = item.at("uid").get<std::string>();
  claim.pod_claim_name = GetOptional(item, "podClaimName");
  for (const Json& owner : item.at("ownerReferences")) {
    claim.owner_references.push_back(
        {owner.at("apiVersion").get<std::string>(), owner.at("kind").get<std::string>(),
         owner.at("name").get<std::string>(), owner.at("uid").get<std::string>(),
         owner.at("controller").get<bool>()});
  }
  const Json& allocation = item.at("allocation");
  if (!allocation.is_null()) {
    claim.allocation.emplace();
    for (const Json& result : allocation) {
      claim.allocation->push_back(
          {result.at("request").get<std::string>(), result.at("driver").get<std::string>(),
           result.at("pool").get<std::string>(), result.at("device").get<std::string>(),
           GetOptional(result, "shareID"), result.value("adminAccess", false),
           result.value("consumedCapacity", std::map<std::string, std::string>()),
           result.value("skipNodeOperations", std::vector<std::string>())});
    }
  }
  for (const Json& consumer : item.at("reservedFor")) {
    claim.reserved_for.push_back(
        {consumer.at("apiGroup").get<std::string>(), consumer.at("resource").get<std::string>(),
         consumer.at("name").get<std::string>(), consumer.at("uid").get<std::string>()});
  }
  if (auto configs = item.find("allocationConfig"); configs != item.end()) {
    for (const Json& config : *configs) {
      const Json& opaque = config.at("opaque");
      claim.allocation_config.push_back({config.at("source").get<std::string>(),
                                         config.at("requests").get<std::vector<std::string>>(),
                                         opaque.at("driver").get<std::string>(),
                                         opaque.at("parameters").dump()});
    }
  }
  return claim;
}

}  // namespace

std::string EncodeRecordPod(const dra::Pod& pod) { return EncodePod(pod).dump(); }

std::string EncodeRecordClaim(const dra::ResourceClaim& claim) { return EncodeClaim(claim).dump(); }

std::string JoinClaimRecord(absl::Span<const std::string* const> pods,
                            absl::Span<const std::string* const> claims) {
  // As nlohmann::json writes the whole document: keys sorted, compact.
  size_t size = 48;
  for (const std::string* piece : pods) size += piece->size() + 1;
  for (const std::string* piece : claims) size += piece->size() + 1;
  std::string out;
  out.reserve(size);
  out += "{\"claims\":[";
  for (size_t i = 0; i < claims.size(); ++i) {
    if (i > 0) out += ',';
    out += *claims[i];
  }
  out += "],\"pods\":[";
  for (size_t i = 0; i < pods.size(); ++i) {
    if (i > 0) out += ',';
    out += *pods[i];
  }
  absl::StrAppend(&out, "],\"version\":", kVersion, "}");
  return out;
}

std::string EncodeClaimRecord(const ClaimRecord& record) {
  std::vector<std::string> pods;
  pods.reserve(record.pods.size());
  for (const dra::Pod& pod : record.pods) pods.push_back(EncodeRecordPod(pod));
  std::vector<std::string> claims;
  claims.reserve(record.claims.size());
  for (const dra::ResourceClaim& claim : record.claims) claims.push_back(EncodeRecordClaim(claim));
  std::vector<const std::string*> pod_pieces;
  for (const std::string& piece : pods) pod_pieces.push_back(&piece);
  std::vector<const std::string*> claim_pieces;
  for (const std::string& piece : claims) claim_pieces.push_back(&piece);
  return JoinClaimRecord(pod_pieces, claim_pieces);
}

absl::StatusOr<ClaimRecord> DecodeClaimRecord(absl::string_view bytes) {
  if (absl::Status shape = CheckJsonShape(bytes, kMaxApiObjectJsonDepth, kMaxStateFileJsonValues);
      !shape.ok()) {
    return absl::DataLossError(shape.message());
  }
  Json document = Json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) {
    return absl::DataLossError("not a JSON object");
  }
  auto version = document.find("version");
  if (version != document.end() && version->is_number_integer() &&
      version->get<int64_t>() > kVersion) {
    // Not damage: a newer devmgr wrote it, and this one must not take it for corrupt.
    return absl::FailedPreconditionError(absl::StrCat("written by a newer devmgr (version ",
                                                      version->get<int64_t>(),
                                                      "; this one reads version ", kVersion, ")"));
  }
  if (version == document.end() || !version->is_number_integer() ||
      version->get<int64_t>() != kVersion) {
    return absl::DataLossError(absl::StrCat("version: want ", kVersion));
  }
  // A field that is missing or of the wrong type makes nlohmann::json throw; every one of them
  // is the same answer: not a record.
  try {
    ClaimRecord record;
    for (const Json& pod : document.at("pods")) record.pods.push_back(DecodePod(pod));
    for (const Json& claim : document.at("claims")) record.claims.push_back(DecodeClaim(claim));
    return record;
  } catch (const Json::exception& e) {
    return absl::DataLossError(absl::StrCat("not a claim record: ", e.what()));
  }
}

}  // namespace devmgr::node
