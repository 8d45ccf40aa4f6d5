#include "structured/device.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "cel/program.h"
#include "kubeapi/json_member.h"
#include "kubeapi/quantity_json.h"
#include "kubeapi/semver.h"

namespace devmgr::structured {
namespace {

using Json = nlohmann::json;
using kubeapi::Quantity;

absl::Status FieldError(const std::string& field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

absl::StatusOr<Quantity> ReadQuantity(const Json& value, const std::string& field) {
  absl::StatusOr<Quantity> quantity = kubeapi::QuantityFromJson(value);
  if (!quantity.ok()) return FieldError(field, quantity.status().message());
  return quantity;
}

absl::StatusOr<std::optional<Quantity>> OptionalQuantity(const Json& object, const char* key,
                                                         const std::string& field) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<Quantity>();
  absl::StatusOr<Quantity> quantity = ReadQuantity(*it, absl::StrCat(field, ".", key));
  if (!quantity.ok()) return quantity.status();
  return std::optional<Quantity>(*quantity);
}

// One element of an attribute: its text, checked against the type.
absl::StatusOr<std::string> ElementText(const Json& value, Attribute::Type type,
                                        const std::string& field) {
  switch (type) {
    case Attribute::Type::kInt:
      if (!value.is_number_integer()) return FieldError(field, "must be an integer");
      if (!kubeapi::IsInt64(value)) return FieldError(field, "is out of range for an integer");
      return std::to_string(value.get<int64_t>());
    case Attribute::Type::kBool:
      if (!value.is_boolean()) return FieldError(field, "must be true or false");
      return std::string(value.get<bool>() ? "true" : "false");
    case Attribute::Type::kString:
    case Attribute::Type::kVersion:
      if (!value.is_string()) return FieldError(field, "must be a string");
      return value.get<std::string>();
    case Attribute::Type::kUnknown:
      break;
  }
  return FieldError(field, "unknown type");
}

absl::StatusOr<Attribute> ReadAttribute(const Json& object, const std::string& field) {
  if (!object.is_object()) return FieldError(field, "must be an object");
  static const struct {
    const char* scalar;
    const char* list;
    Attribute::Type type;
  } kKinds[] = {{"int", "ints", Attribute::Type::kInt},
                {"bool", "bools", Attribute::Type::kBool},
                {"string", "strings", Attribute::Type::kString},
                {"version", "versions", Attribute::Type::kVersion}};
  for (const auto& kind : kKinds) {
    if (auto it = object.find(kind.scalar); it != object.end() && !it->is_null()) {
      Attribute attribute{kind.type, false, {}};
      absl::StatusOr<std::string> text =
          ElementText(*it, kind.type, absl::StrCat(field, ".", kind.scalar));
      if (!text.ok()) return text.status();
      attribute.values.push_back(*std::move(text));
      return attribute;
    }
    if (auto it = object.find(kind.list); it != object.end() && !it->is_null()) {
      if (!it->is_array()) return FieldError(absl::StrCat(field, ".", kind.list), "must be a list");
      Attribute attribute{kind.type, true, {}};
      for (size_t i = 0; i < it->size(); ++i) {
        absl::StatusOr<std::string> text =
            ElementText((*it)[i], kind.type, absl::StrCat(field, ".", kind.list, "[", i, "]"));
        if (!text.ok()) return text.status();
        attribute.values.push_back(*std::move(text));
      }
      return attribute;
    }
  }
  return Attribute{Attribute::Type::kUnknown, false, {}};
}

absl::StatusOr<CapacityRequestPolicy> ReadPolicy(const Json& object, const std::string& field) {
  if (!object.is_object()) return FieldError(field, "must be an object");
  CapacityRequestPolicy policy;
  absl::StatusOr<std::optional<Quantity>> default_value =
      OptionalQuantity(object, "default", field);
  if (!default_value.ok()) return default_value.status();
  policy.default_value = *default_value;
  if (auto it = object.find("validValues"); it != object.end() && !it->is_null()) {
    if (!it->is_array()) return FieldError(absl::StrCat(field, ".validValues"), "must be a list");
    for (size_t i = 0; i < it->size(); ++i) {
      absl::StatusOr<Quantity> value =
          ReadQuantity((*it)[i], absl::StrCat(field, ".validValues[", i, "]"));
      if (!value.ok()) return value.status();
      policy.valid_values.push_back(*value);
    }
  }
  if (auto it = object.find("validRange"); it != object.end() && !it->is_null()) {
    const std::string range_field = absl::StrCat(field, ".validRange");
    if (!it->is_object()) return FieldError(range_field, "must be an object");
    CapacityRequestPolicy::Range range;
    for (auto [key, target] : {std::pair{"min", &range.min}, std::pair{"max", &range.max},
                               std::pair{"step", &range.step}}) {
      absl::StatusOr<std::optional<Quantity>> value = OptionalQuantity(*it, key, range_field);
      if (!value.ok()) return value.status();
      *target = *value;
    }
    policy.valid_range = range;
  }
  return policy;
}

absl::StatusOr<DeviceCapacity> ReadCapacity(const Json& object, const std::string& field) {
  if (!object.is_object()) return FieldError(field, "must be an object");
  DeviceCapacity capacity;
  auto value = object.find("value");
  if (value == object.end()) return FieldError(absl::StrCat(field, ".value"), "is required");
  absl::StatusOr<Quantity> amount = ReadQuantity(*value, absl::StrCat(field, ".value"));
  if (!amount.ok()) return amount.status();
  capacity.value = *amount;
  if (auto it = object.find("requestPolicy"); it != object.end() && !it->is_null()) {
    absl::StatusOr<CapacityRequestPolicy> policy =
        ReadPolicy(*it, absl::StrCat(field, ".requestPolicy"));
    if (!policy.ok()) return policy.status();
    capacity.request_policy = *std::move(policy);
  }
  return capacity;
}

absl::StatusOr<Counters> ReadCounters(const Json& object, const std::string& field) {
  if (!object.is_object()) return FieldError(field, "must be an object");
  Counters counters;
  for (const auto& [name, counter] : object.items()) {
    const std::string counter_field = absl::StrCat(field, ".", name);
    if (!counter.is_object() || !counter.contains("value")) {
      return FieldError(counter_field, "must be an object with a value");
    }
    absl::StatusOr<Quantity> value = ReadQuantity(counter["value"], counter_field + ".value");
    if (!value.ok()) return value.status();
    counters.emplace(name, *value);
  }
  return counters;
}

absl::StatusOr<std::vector<std::string>> Strings(const Json& object, const char* key,
                                                 const std::string& field) {
  std::vector<std::string> out;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return out;
  if (!it->is_array()) return FieldError(absl::StrCat(field, ".", key), "must be a list");
  for (const Json& item : *it) {
    if (!item.is_string()) return FieldError(absl::StrCat(field, ".", key), "must be strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

// The CEL value of an attribute; a version that does not parse is an error.
absl::StatusOr<cel::Value> CelAttribute(const std::string& name, const Attribute& attribute) {
  auto element = [&](const std::string& text) -> absl::StatusOr<cel::Value> {
    switch (attribute.type) {
      case Attribute::Type::kInt:
        return cel::Value::Int(std::stoll(text));
      case Attribute::Type::kBool:
        return cel::Value::Bool(text == "true");
      case Attribute::Type::kString:
        return cel::Value::String(text);
      case Attribute::Type::kUnknown:
        break;
      case Attribute::Type::kVersion: {
        absl::StatusOr<kubeapi::Semver> version = kubeapi::Semver::Parse(text);
        if (!version.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "attribute ", name, ": parse semantic version: ", version.status().message()));
        }
        return cel::Value::SemverOf(*std::move(version));
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat("attribute ", name, ": unsupported attribute value"));
  };
  if (!attribute.is_list) return element(attribute.values.empty() ? "" : attribute.values.front());
  cel::List items;
  for (const std::string& text : attribute.values) {
    absl::StatusOr<cel::Value> item = element(text);
    if (!item.ok()) return item.status();
    items.push_back(*std::move(item));
  }
  return cel::Value::ListOf(std::move(items));
}

absl::StatusOr<cel::Value> CelDevice(const std::string& driver, const DeviceInfo& device) {
  cel::Device input;
  input.driver = driver;
  input.allow_multiple_allocations = device.allow_multiple_allocations;
  for (const auto& [name, attribute] : device.attributes) {
    absl::StatusOr<cel::Value> value = CelAttribute(name, attribute);
    if (!value.ok()) return value.status();
    input.attributes.emplace(name, *std::move(value));
  }
  for (const auto& [name, capacity] : device.capacity) input.capacity.emplace(name, capacity.value);
  return cel::DeviceValue(input);
}

absl::StatusOr<DeviceInfo> ReadDevice(const std::string& driver, const kubeapi::Device& device,
                                      const std::string& field) {
  DeviceInfo info;
  info.name = device.name;
  info.taints = device.taints;
  for (size_t i = 0; i < device.consumes_counters.size(); ++i) {
    const kubeapi::DeviceCounterConsumption& consumption = device.consumes_counters[i];
    absl::StatusOr<Counters> counters = ReadCounters(
        consumption.counters, absl::StrCat(field, ".consumesCounters[", i, "].counters"));
    if (!counters.ok()) return counters.status();
    info.consumes_counters.push_back({consumption.counter_set, *std::move(counters)});
  }
  const Json& extra = device.extra;
  if (auto it = extra.find("attributes"); it != extra.end() && !it->is_null()) {
    if (!it->is_object()) return FieldError(field + ".attributes", "must be an object");
    for (const auto& [name, value] : it->items()) {
      absl::StatusOr<Attribute> attribute =
          ReadAttribute(value, absl::StrCat(field, ".attributes.", name));
      if (!attribute.ok()) return attribute.status();
      info.attributes.emplace(name, *std::move(attribute));
    }
  }
  if (auto it = extra.find("capacity"); it != extra.end() && !it->is_null()) {
    if (!it->is_object()) return FieldError(field + ".capacity", "must be an object");
    for (const auto& [name, value] : it->items()) {
      absl::StatusOr<DeviceCapacity> capacity =
          ReadCapacity(value, absl::StrCat(field, ".capacity.", name));
      if (!capacity.ok()) return capacity.status();
      info.capacity.emplace(name, *std::move(capacity));
    }
  }
  if (auto it = extra.find("nodeName"); it != extra.end() && it->is_string()) {
    info.node_name = it->get<std::string>();
  }
  if (auto it = extra.find("nodeSelector"); it != extra.end() && it->is_object()) {
    info.node_selector = *it;
  }
  if (auto it = extra.find("allNodes"); it != extra.end() && it->is_boolean()) {
    info.all_nodes = it->get<bool>();
  }
  if (auto it = extra.find("bindsToNode"); it != extra.end() && it->is_boolean()) {
    info.binds_to_node = it->get<bool>();
  }
  for (auto [key, target] :
       {std::pair{"bindingConditions", &info.binding_conditions},
        std::pair{"bindingFailureConditions", &info.binding_failure_conditions}}) {
    absl::StatusOr<std::vector<std::string>> values = Strings(extra, key, field);
    if (!values.ok()) return values.status();
    *target = *std::move(values);
  }
  if (auto it = extra.find("allowMultipleAllocations"); it != extra.end() && it->is_boolean()) {
    info.allow_multiple_allocations = it->get<bool>();
  }
  info.cel_value = CelDevice(driver, info);
  return info;
}

}  // namespace

std::shared_ptr<const SliceInfo> ReadSlice(const kubeapi::ResourceSlice& slice) {
  auto info = std::make_shared<SliceInfo>();
  const kubeapi::ResourceSliceSpec& spec = slice.spec;
  info->name = slice.metadata.name;
  info->driver = spec.driver;
  info->pool = spec.pool.name;
  info->generation = spec.pool.generation;
  info->slice_count = spec.pool.resource_slice_count;
  info->node_name = spec.node_name.value_or("");
  info->node_selector = spec.node_selector;
  info->all_nodes = spec.all_nodes.value_or(false);
  info->per_device_node_selection = spec.per_device_node_selection;
  info->skip_node_operations = spec.skip_node_operations;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    absl::StatusOr<DeviceInfo> device =
        ReadDevice(spec.driver, spec.devices[i], absl::StrCat("spec.devices[", i, "]"));
    if (!device.ok()) {
      info->invalid_reason =
          absl::StrCat("ResourceSlice ", slice.metadata.name, ": ", device.status().message());
      info->devices.clear();
      break;
    }
    info->devices.push_back(*std::move(device));
  }
  for (size_t i = 0; i < spec.shared_counters.size() && info->invalid_reason.empty(); ++i) {
    absl::StatusOr<Counters> counters = ReadCounters(
        spec.shared_counters[i].counters, absl::StrCat("spec.sharedCounters[", i, "].counters"));
    if (!counters.ok()) {
      info->invalid_reason =
          absl::StrCat("ResourceSlice ", slice.metadata.name, ": ", counters.status().message());
      break;
    }
    info->shared_counters.emplace_back(spec.shared_counters[i].name, *std::move(counters));
  }
  return info;
}

const Attribute* LookupAttribute(const DeviceInfo& device, const std::string& driver,
                                 const std::string& name) {
  if (auto it = device.attributes.find(name); it != device.attributes.end()) return &it->second;
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return nullptr;
  if (name.compare(0, slash, driver) != 0 || slash != driver.size()) return nullptr;
  if (auto it = device.attributes.find(name.substr(slash + 1)); it != device.attributes.end()) {
    return &it->second;
  }
  return nullptr;
}

}  // namespace devmgr::structured
