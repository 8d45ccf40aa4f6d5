#include "kubeapi/resource_claim.h"

#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kubeapi/json_fields.h"
#include "kubeapi/quantity_json.h"
#include "kubeapi/resource_versions.h"

namespace devmgr::kubeapi {
namespace {

using internal::FieldError;
using internal::Fields;
using internal::PutString;

absl::StatusOr<Quantity> ReadQuantity(const Json& value, const std::string& field) {
  absl::StatusOr<Quantity> quantity = QuantityFromJson(value);
  if (!quantity.ok()) return FieldError(field, quantity.status().message());
  return quantity;
}

absl::StatusOr<std::map<std::string, Quantity>> QuantityMap(const Json& object,
                                                            const std::string& field) {
  if (!object.is_object()) return FieldError(field, "must be an object");
  std::map<std::string, Quantity> out;
  for (const auto& [name, value] : object.items()) {
    absl::StatusOr<Quantity> quantity = ReadQuantity(value, absl::StrCat(field, ".", name));
    if (!quantity.ok()) return quantity.status();
    out.emplace(name, *quantity);
  }
  return out;
}

absl::StatusOr<DeviceSelector> DecodeSelector(const Json& object, const std::string& field) {
  Fields fields(object, field);
  if (absl::Status ok = fields.CheckObject(); !ok.ok()) return ok;
  DeviceSelector selector;
  Json cel = fields.Take("cel");
  if (cel.is_null()) return selector;
  Fields cel_fields(cel, fields.Name("cel"));
  if (absl::Status ok = cel_fields.CheckObject(); !ok.ok()) return ok;
  absl::StatusOr<std::string> expression = cel_fields.String("expression");
  if (!expression.ok()) return expression.status();
  selector.cel_expression = *std::move(expression);
  return selector;
}

absl::StatusOr<DeviceToleration> DecodeToleration(const Json& object, const std::string& field) {
  Fields fields(object, field);
  if (absl::Status ok = fields.CheckObject(); !ok.ok()) return ok;
  DeviceToleration toleration;
  for (auto [key, target] :
       {std::pair{"key", &toleration.key}, std::pair{"operator", &toleration.op},
        std::pair{"value", &toleration.value}, std::pair{"effect", &toleration.effect}}) {
    absl::StatusOr<std::string> value = fields.String(key);
    if (!value.ok()) return value.status();
    *target = *std::move(value);
  }
  if (toleration.op.empty()) toleration.op = "Equal";
  Json seconds = fields.Take("tolerationSeconds");
  if (!seconds.is_null()) {
    absl::StatusOr<int64_t> value = internal::IntOf(seconds, fields.Name("tolerationSeconds"));
    if (!value.ok()) return value.status();
    toleration.toleration_seconds = *value;
  }
  toleration.extra = std::move(fields).Rest();
  return toleration;
}

// The fields a request and a subrequest share; `admin_access` only for a request.
absl::Status DecodeExactFields(Fields& fields, bool admin_access, ExactDeviceRequest& out) {
  absl::StatusOr<std::string> class_name = fields.String("deviceClassName");
  if (!class_name.ok()) return class_name.status();
  out.device_class_name = *std::move(class_name);
  absl::StatusOr<std::vector<DeviceSelector>> selectors =
      fields.List<DeviceSelector>("selectors", DecodeSelector);
  if (!selectors.ok()) return selectors.status();
  out.selectors = *std::move(selectors);
  absl::StatusOr<std::string> mode = fields.String("allocationMode");
  if (!mode.ok()) return mode.status();
  out.allocation_mode = mode->empty() ? kAllocationModeExactCount : *std::move(mode);
  // Absent or 0: 1 for ExactCount, as the API server defaults it (0 and absent are one value
  // in its types); All has no count.
  absl::StatusOr<int64_t> count = fields.Int("count");
  if (!count.ok()) return count.status();
  out.count = (*count == 0 && out.allocation_mode == kAllocationModeExactCount) ? 1 : *count;
  if (admin_access) {
    absl::StatusOr<std::optional<bool>> admin = fields.OptionalBool("adminAccess");
    if (!admin.ok()) return admin.status();
    out.admin_access = *admin;
  }
  absl::StatusOr<std::vector<DeviceToleration>> tolerations =
      fields.List<DeviceToleration>("tolerations", DecodeToleration);
  if (!tolerations.ok()) return tolerations.status();
  out.tolerations = *std::move(tolerations);
  Json capacity = fields.Take("capacity");
  if (!capacity.is_null()) {
    Fields capacity_fields(capacity, fields.Name("capacity"));
    if (absl::Status ok = capacity_fields.CheckObject(); !ok.ok()) return ok;
    absl::StatusOr<Json> requests = capacity_fields.Object("requests");
    if (!requests.ok()) return requests.status();
    absl::StatusOr<std::map<std::string, Quantity>> amounts =
        QuantityMap(*requests, capacity_fields.Name("requests"));
    if (!amounts.ok()) return amounts.status();
    out.capacity_requests = *std::move(amounts);
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceSubRequest> DecodeSubRequest(const Json& object, const std::string& field) {
  Fields fields(object, field);
  if (absl::Status ok = fields.CheckObject(); !ok.ok()) return ok;
  DeviceSubRequest sub;
  absl::StatusOr<std::string> name = fields.String("name");
  if (!name.ok()) return name.status();
  sub.name = *std::move(name);
  if (absl::Status ok = DecodeExactFields(fields, /*admin_access=*/false, sub.request); !ok.ok()) {
    return ok;
  }
  return sub;
}

absl::StatusOr<DeviceRequest> DecodeRequest(const Json& object, const std::string& field) {
  Fields fields(object, field);
  if (absl::Status ok = fields.CheckObject(); !ok.ok()) return ok;
  DeviceRequest request;
  absl::StatusOr<std::string> name = fields.String("name");
  if (!name.ok()) return name.status();
  request.name = *std::move(name);
  Json exactly = fields.Take("exactly");
  if (!exactly.is_null()) {
    Fields exact_fields(exactly, fields.Name("exactly"));
    if (absl::Status ok = exact_fields.CheckObject(); !ok.ok()) return ok;
    ExactDeviceRequest exact;
    if (absl::Status ok = DecodeExactFields(exact_fields, /*admin_access=*/true, exact); !ok.ok()) {
      return ok;
    }
    request.exactly = std::move(exact);
  }
  absl::StatusOr<std::vector<DeviceSubRequest>> subs =
      fields.List<DeviceSubRequest>("firstAvailable", DecodeSubRequest);
  if (!subs.ok()) return subs.status();
  request.first_available = *std::move(subs);
  return request;
}

absl::StatusOr<DeviceConstraint> DecodeConstraint(const Json& object, const std::string& field) {
  Fields fields(object, field);
  if (absl::Status ok = fields.CheckObject(); !ok.ok()) return ok;
  DeviceConstraint constraint;
  absl::StatusOr<std::vector<std::string>> requests = fields.StringList("requests");
  if (!requests.ok()) return requests.status();
  constraint.requests = *std::move(requests);
  absl::StatusOr<std::optional<std::string>> match = fields.OptionalString("matchAttribute");
  if (!match.ok()) return match.status();
  constraint.match_attribute = *std::move(match);
  absl::StatusOr<std::optional<std::string>> distinct = fields.OptionalString("distinctAttribute");
  if (!distinct.ok()) return distinct.status();
  constraint.distinct_attribute = *std::move(distinct);
  return constraint;
}

absl::StatusOr<DeviceClaimConfiguration> DecodeClaimConfig(const Json& object,
                                                           const std::string& field) {
  Fields fields(object, field);
  if (absl::Status ok = fields.CheckObject(); !ok.ok()) return ok;
  DeviceClaimConfiguration config;
  absl::StatusOr<std::vector<std::string>> requests = fields.StringList("requests");
  if (!requests.ok()) return requests.status();
  config.requests = *std::move(requests);
  config.configuration = std::move(fields).Rest();
  return config;
}

absl::StatusOr<DeviceRequestAllocationResult> DecodeResult(const Json& object,
                                                           const std::string& field) {
  Fields fields(object, field);
  if (absl::Status ok = fields.CheckObject(); !ok.ok()) return ok;
  DeviceRequestAllocationResult result;
  for (auto [key, target] :
       {std::pair{"request", &result.request}, std::pair{"driver", &result.driver},
        std::pair{"pool", &result.pool}, std::pair{"device", &result.device}}) {
    absl::StatusOr<std::string> value = fields.String(key);
    if (!value.ok()) return value.status();
    *target = *std::move(value);
  }
  absl::StatusOr<std::optional<bool>> admin = fields.OptionalBool("adminAccess");
  if (!admin.ok()) return admin.status();
  result.admin_access = *admin;
  absl::StatusOr<std::vector<DeviceToleration>> tolerations =
      fields.List<DeviceToleration>("tolerations", DecodeToleration);
  if (!tolerations.ok()) return tolerations.status();
  result.tolerations = *std::move(tolerations);
  absl::StatusOr<std::vector<std::string>> conditions = fields.StringList("bindingConditions");
  if (!conditions.ok()) return conditions.status();
  result.binding_conditions = *std::move(conditions);
  absl::StatusOr<std::vector<std::string>> failures = fields.StringList("bindingFailureConditions");
  if (!failures.ok()) return failures.status();
  result.binding_failure_conditions = *std::move(failures);
  absl::StatusOr<std::optional<std::string>> share = fields.OptionalString("shareID");
  if (!share.ok()) return share.status();
  result.share_id = *std::move(share);
  absl::StatusOr<Json> consumed = fields.Object("consumedCapacity");
  if (!consumed.ok()) return consumed.status();
  absl::StatusOr<std::map<std::string, Quantity>> amounts =
      QuantityMap(*consumed, fields.Name("consumedCapacity"));
  if (!amounts.ok()) return amounts.status();
  result.consumed_capacity = *std::move(amounts);
  absl::StatusOr<std::vector<std::string>> skips = fields.StringList("skipNodeOperations");
  if (!skips.ok()) return skips.status();
  result.skip_node_operations = *std::move(skips);
  return result;
}

absl::StatusOr<DeviceAllocationConfiguration> DecodeAllocationConfig(const Json& object,
                                                                     const std::string& field) {
  Fields fields(object, field);
  if (absl::Status ok = fields.CheckObject(); !ok.ok()) return ok;
  DeviceAllocationConfiguration config;
  absl::StatusOr<std::string> source = fields.String("source");
  if (!source.ok()) return source.status();
  config.source = *std::move(source);
  absl::StatusOr<std::vector<std::string>> requests = fields.StringList("requests");
  if (!requests.ok()) return requests.status();
  config.requests = *std::move(requests);
  config.configuration = std::move(fields).Rest();
  return config;
}

Json StringArray(const std::vector<std::string>& items) {
  Json out = Json::array();
  for (const std::string& item : items) out.push_back(item);
  return out;
}

// The kind and apiVersion of an object; `kind` must be `expected` when set.
absl::Status CheckKind(Fields& fields, const char* expected) {
  absl::StatusOr<std::string> kind = fields.String("kind");
  if (!kind.ok()) return kind.status();
  if (!kind->empty() && *kind != expected) {
    return FieldError("kind", absl::StrCat("is \"", *kind, "\", not ", expected));
  }
  return absl::OkStatus();
}

}  // namespace

Json EncodeToleration(const DeviceToleration& toleration) {
  Json out = toleration.extra;
  PutString(out, "key", toleration.key);
  out["operator"] = toleration.op;
  PutString(out, "value", toleration.value);
  PutString(out, "effect", toleration.effect);
  if (toleration.toleration_seconds.has_value()) {
    out["tolerationSeconds"] = *toleration.toleration_seconds;
  }
  return out;
}

Json EncodeAllocationResult(const AllocationResult& allocation) {
  Json results = Json::array();
  for (const DeviceRequestAllocationResult& result : allocation.results) {
    Json item = {{"request", result.request},
                 {"driver", result.driver},
                 {"pool", result.pool},
                 {"device", result.device}};
    if (result.admin_access.has_value()) item["adminAccess"] = *result.admin_access;
    if (!result.tolerations.empty()) {
      Json tolerations = Json::array();
      for (const DeviceToleration& toleration : result.tolerations) {
        tolerations.push_back(EncodeToleration(toleration));
      }
      item["tolerations"] = std::move(tolerations);
    }
    if (!result.binding_conditions.empty()) {
      item["bindingConditions"] = StringArray(result.binding_conditions);
    }
    if (!result.binding_failure_conditions.empty()) {
      item["bindingFailureConditions"] = StringArray(result.binding_failure_conditions);
    }
    if (result.share_id.has_value()) item["shareID"] = *result.share_id;
    if (!result.consumed_capacity.empty()) {
      Json consumed = Json::object();
      for (const auto& [name, amount] : result.consumed_capacity) {
        consumed[name] = amount.ToString();
      }
      item["consumedCapacity"] = std::move(consumed);
    }
    if (!result.skip_node_operations.empty()) {
      item["skipNodeOperations"] = StringArray(result.skip_node_operations);
    }
    results.push_back(std::move(item));
  }
  Json devices = {{"results", std::move(results)}};
  if (!allocation.config.empty()) {
    Json configs = Json::array();
    for (const DeviceAllocationConfiguration& config : allocation.config) {
      Json item = config.configuration;
      item["source"] = config.source;
      if (!config.requests.empty()) item["requests"] = StringArray(config.requests);
      configs.push_back(std::move(item));
    }
    devices["config"] = std::move(configs);
  }
  Json out = {{"devices", std::move(devices)}};
  if (allocation.node_selector.has_value()) out["nodeSelector"] = *allocation.node_selector;
  if (allocation.allocation_timestamp.has_value()) {
    out["allocationTimestamp"] = *allocation.allocation_timestamp;
  }
  return out;
}

absl::StatusOr<AllocationResult> DecodeAllocationResult(const Json& object,
                                                        const std::string& field) {
  Fields fields(object, field);
  if (absl::Status ok = fields.CheckObject(); !ok.ok()) return ok;
  AllocationResult allocation;
  absl::StatusOr<Json> devices = fields.Object("devices");
  if (!devices.ok()) return devices.status();
  Fields device_fields(*devices, fields.Name("devices"));
  absl::StatusOr<std::vector<DeviceRequestAllocationResult>> results =
      device_fields.List<DeviceRequestAllocationResult>("results", DecodeResult);
  if (!results.ok()) return results.status();
  allocation.results = *std::move(results);
  absl::StatusOr<std::vector<DeviceAllocationConfiguration>> configs =
      device_fields.List<DeviceAllocationConfiguration>("config", DecodeAllocationConfig);
  if (!configs.ok()) return configs.status();
  allocation.config = *std::move(configs);
  Json selector = fields.Take("nodeSelector");
  if (!selector.is_null()) {
    if (!selector.is_object()) return FieldError(fields.Name("nodeSelector"), "must be an object");
    allocation.node_selector = std::move(selector);
  }
  absl::StatusOr<std::optional<std::string>> timestamp =
      fields.OptionalString("allocationTimestamp");
  if (!timestamp.ok()) return timestamp.status();
  allocation.allocation_timestamp = *std::move(timestamp);
  return allocation;
}

absl::StatusOr<ResourceClaim> DecodeResourceClaim(const Json& object) {
  if (!object.is_object()) return absl::InvalidArgumentError("a ResourceClaim must be an object");
  ResourceClaim claim;
  // The allocation lives in claim.allocation only: the kept document never holds a second copy.
  claim.object = object;
  if (auto status = claim.object.find("status");
      status != claim.object.end() && status->is_object()) {
    status->erase("allocation");
  }
  // Read in v1's shape; the document keeps the version it was written in.
  Fields fields(ResourceClaimToV1(object, VersionOf(object)), "");
  if (absl::Status ok = CheckKind(fields, "ResourceClaim"); !ok.ok()) return ok;
  if (Json meta = fields.Take("metadata"); !meta.is_null()) {
    absl::StatusOr<ObjectMeta> decoded = DecodeObjectMeta(meta);
    if (!decoded.ok()) return decoded.status();
    claim.metadata = *std::move(decoded);
  }
  absl::StatusOr<Json> spec = fields.Object("spec");
  if (!spec.ok()) return spec.status();
  Fields spec_fields(*spec, "spec");
  absl::StatusOr<Json> devices = spec_fields.Object("devices");
  if (!devices.ok()) return devices.status();
  Fields device_fields(*devices, "spec.devices");
  absl::StatusOr<std::vector<DeviceRequest>> requests =
      device_fields.List<DeviceRequest>("requests", DecodeRequest);
  if (!requests.ok()) return requests.status();
  claim.spec.requests = *std::move(requests);
  absl::StatusOr<std::vector<DeviceConstraint>> constraints =
      device_fields.List<DeviceConstraint>("constraints", DecodeConstraint);
  if (!constraints.ok()) return constraints.status();
  claim.spec.constraints = *std::move(constraints);
  absl::StatusOr<std::vector<DeviceClaimConfiguration>> configs =
      device_fields.List<DeviceClaimConfiguration>("config", DecodeClaimConfig);
  if (!configs.ok()) return configs.status();
  claim.spec.config = *std::move(configs);

  absl::StatusOr<Json> status = fields.Object("status");
  if (!status.ok()) return status.status();
  Fields status_fields(*status, "status");
  Json allocation = status_fields.Take("allocation");
  if (!allocation.is_null()) {
    absl::StatusOr<AllocationResult> decoded =
        DecodeAllocationResult(allocation, "status.allocation");
    if (!decoded.ok()) return decoded.status();
    claim.allocation = *std::move(decoded);
  }
  return claim;
}

Json EncodeResourceClaim(const ResourceClaim& claim) {
  Json out = claim.object;
  if (!out.is_object()) out = Json::object();
  auto status = out.find("status");
  if (claim.allocation.has_value()) {
    if (status == out.end() || !status->is_object()) out["status"] = Json::object();
    out["status"]["allocation"] = EncodeAllocationResult(*claim.allocation);
  } else if (status != out.end() && status->is_object()) {
    status->erase("allocation");
  }
  return out;
}

absl::StatusOr<DeviceClass> DecodeDeviceClass(const Json& object) {
  if (!object.is_object()) return absl::InvalidArgumentError("a DeviceClass must be an object");
  Fields fields(object, "");
  if (absl::Status ok = CheckKind(fields, "DeviceClass"); !ok.ok()) return ok;
  DeviceClass device_class;
  if (Json meta = fields.Take("metadata"); !meta.is_null()) {
    absl::StatusOr<ObjectMeta> decoded = DecodeObjectMeta(meta);
    if (!decoded.ok()) return decoded.status();
    device_class.metadata = *std::move(decoded);
  }
  absl::StatusOr<Json> spec = fields.Object("spec");
  if (!spec.ok()) return spec.status();
  Fields spec_fields(*spec, "spec");
  absl::StatusOr<std::vector<DeviceSelector>> selectors =
      spec_fields.List<DeviceSelector>("selectors", DecodeSelector);
  if (!selectors.ok()) return selectors.status();
  device_class.selectors = *std::move(selectors);
  absl::StatusOr<std::vector<Json>> config = spec_fields.List<Json>(
      "config", [](const Json& item, const std::string& field) -> absl::StatusOr<Json> {
        if (!item.is_object()) return FieldError(field, "must be an object");
        return item;
      });
  if (!config.ok()) return config.status();
  device_class.config = *std::move(config);
  absl::StatusOr<std::optional<std::string>> extended =
      spec_fields.OptionalString("extendedResourceName");
  if (!extended.ok()) return extended.status();
  device_class.extended_resource_name = *std::move(extended);
  return device_class;
}

}  // namespace devmgr::kubeapi
