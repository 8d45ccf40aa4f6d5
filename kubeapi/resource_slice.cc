#include "kubeapi/resource_slice.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "kubeapi/json_fields.h"
#include "kubeapi/resource_versions.h"
#include "kubeapi/semantic_equal.h"

namespace devmgr::kubeapi {
namespace {

using internal::FieldError;
using internal::Fields;
using internal::PutString;

absl::StatusOr<DeviceTaint> DecodeTaint(const Json& object, const std::string& field) {
  Fields fields(object, field);
  if (absl::Status ok = fields.CheckObject(); !ok.ok()) return ok;
  DeviceTaint taint;
  for (auto [key, target] : {std::pair{"key", &taint.key}, std::pair{"value", &taint.value},
                             std::pair{"effect", &taint.effect}}) {
    absl::StatusOr<std::string> value = fields.String(key);
    if (!value.ok()) return value.status();
    *target = *std::move(value);
  }
  absl::StatusOr<std::optional<std::string>> added = fields.OptionalString("timeAdded");
  if (!added.ok()) return added.status();
  taint.time_added = *std::move(added);
  taint.extra = std::move(fields).Rest();
  return taint;
}

Json EncodeTaint(const DeviceTaint& taint) {
  Json out = taint.extra;
  out["key"] = taint.key;
  PutString(out, "value", taint.value);
  out["effect"] = taint.effect;
  if (taint.time_added.has_value()) out["timeAdded"] = *taint.time_added;
  return out;
}

absl::StatusOr<DeviceCounterConsumption> DecodeConsumption(const Json& object,
                                                           const std::string& field) {
  Fields fields(object, field);
  if (absl::Status ok = fields.CheckObject(); !ok.ok()) return ok;
  DeviceCounterConsumption consumption;
  absl::StatusOr<std::string> set = fields.String("counterSet");
  if (!set.ok()) return set.status();
  consumption.counter_set = *std::move(set);
  absl::StatusOr<Json> counters = fields.Object("counters");
  if (!counters.ok()) return counters.status();
  consumption.counters = *std::move(counters);
  consumption.extra = std::move(fields).Rest();
  return consumption;
}

absl::StatusOr<CounterSet> DecodeCounterSet(const Json& object, const std::string& field) {
  Fields fields(object, field);
  if (absl::Status ok = fields.CheckObject(); !ok.ok()) return ok;
  CounterSet set;
  absl::StatusOr<std::string> name = fields.String("name");
  if (!name.ok()) return name.status();
  set.name = *std::move(name);
  absl::StatusOr<Json> counters = fields.Object("counters");
  if (!counters.ok()) return counters.status();
  set.counters = *std::move(counters);
  set.extra = std::move(fields).Rest();
  return set;
}

// RFC 3339 time, or nullopt when it does not parse.
std::optional<absl::Time> ParseTime(const std::string& text) {
  absl::Time time;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, text, &time, &error)) return std::nullopt;
  return time;
}

// Upstream's deviceTaintEqual: key, value and effect; times only when both are set, within a
// second of each other.
bool TaintEqual(const DeviceTaint& a, const DeviceTaint& b) {
  if (a.time_added.has_value() && b.time_added.has_value() && *a.time_added != *b.time_added) {
    const std::optional<absl::Time> ta = ParseTime(*a.time_added);
    const std::optional<absl::Time> tb = ParseTime(*b.time_added);
    if (!ta.has_value() || !tb.has_value()) return false;
    if (absl::AbsDuration(*tb - *ta) > absl::Seconds(1)) return false;
  }
  return a.key == b.key && a.value == b.value && a.effect == b.effect;
}

// apiequality.Semantic of two taints: a timeAdded is a time (the same instant written two ways is
// one value), absent only equal to absent.
bool TaintSemanticEqual(const DeviceTaint& a, const DeviceTaint& b) {
  if (a.key != b.key || a.value != b.value || a.effect != b.effect ||
      a.time_added.has_value() != b.time_added.has_value() || !SemanticEqual(a.extra, b.extra)) {
    return false;
  }
  if (!a.time_added.has_value() || *a.time_added == *b.time_added) return true;
  const std::optional<absl::Time> ta = ParseTime(*a.time_added);
  const std::optional<absl::Time> tb = ParseTime(*b.time_added);
  return ta.has_value() && tb.has_value() && *ta == *tb;
}

bool ConsumptionsEqual(const std::vector<DeviceCounterConsumption>& a,
                       const std::vector<DeviceCounterConsumption>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const DeviceCounterConsumption& x, const DeviceCounterConsumption& y) {
                      return x.counter_set == y.counter_set &&
                             SemanticEqual(x.counters, y.counters, CounterQuantityFields()) &&
                             SemanticEqual(x.extra, y.extra);
                    });
}

// Devices compared field by field, their taints by `taint_equal`.
bool DevicesEqual(const std::vector<Device>& a, const std::vector<Device>& b,
                  bool (*taint_equal)(const DeviceTaint&, const DeviceTaint&)) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [&](const Device& x, const Device& y) {
    return x.name == y.name && ConsumptionsEqual(x.consumes_counters, y.consumes_counters) &&
           SemanticEqual(x.extra, y.extra, DeviceQuantityFields()) &&
           std::equal(x.taints.begin(), x.taints.end(), y.taints.begin(), y.taints.end(),
                      taint_equal);
  });
}

}  // namespace

absl::StatusOr<Device> DecodeDevice(const Json& object, const std::string& field) {
  Fields fields(object, field);
  if (absl::Status ok = fields.CheckObject(); !ok.ok()) return ok;
  Device device;
  absl::StatusOr<std::string> name = fields.String("name");
  if (!name.ok()) return name.status();
  device.name = *std::move(name);
  absl::StatusOr<std::vector<DeviceTaint>> taints = fields.List<DeviceTaint>("taints", DecodeTaint);
  if (!taints.ok()) return taints.status();
  device.taints = *std::move(taints);
  absl::StatusOr<std::vector<DeviceCounterConsumption>> consumption =
      fields.List<DeviceCounterConsumption>("consumesCounters", DecodeConsumption);
  if (!consumption.ok()) return consumption.status();
  device.consumes_counters = *std::move(consumption);
  device.extra = std::move(fields).Rest();
  return device;
}

Json EncodeDevice(const Device& device) {
  Json out = device.extra;
  out["name"] = device.name;
  if (!device.taints.empty()) {
    Json taints = Json::array();
    for (const DeviceTaint& taint : device.taints) taints.push_back(EncodeTaint(taint));
    out["taints"] = std::move(taints);
  }
  if (!device.consumes_counters.empty()) {
    Json consumption = Json::array();
    for (const DeviceCounterConsumption& item : device.consumes_counters) {
      Json entry = item.extra;
      entry["counterSet"] = item.counter_set;
      entry["counters"] = item.counters;
      consumption.push_back(std::move(entry));
    }
    out["consumesCounters"] = std::move(consumption);
  }
  return out;
}

Json EncodeCounterSet(const CounterSet& set) {
  Json out = set.extra;
  out["name"] = set.name;
  out["counters"] = set.counters;
  return out;
}

absl::StatusOr<ResourceSlice> DecodeResourceSlice(const Json& object) {
  // A slice of an older version (a file from `kubectl get` of a cluster serving it) is read in
  // v1's shape, as the API client reads one: v1beta1 keeps a device's fields under `basic`.
  if (const ResourceVersion version = VersionOf(object); version != ResourceVersion::kV1) {
    return DecodeResourceSlice(ResourceSliceToV1(object, version));
  }
  Fields fields(object, "");
  if (!object.is_object()) return absl::InvalidArgumentError("a ResourceSlice must be an object");
  ResourceSlice slice;
  absl::StatusOr<std::string> kind = fields.String("kind");
  if (!kind.ok()) return kind.status();
  if (!kind->empty() && *kind != "ResourceSlice") {
    return FieldError("kind", absl::StrCat("is \"", *kind, "\", not ResourceSlice"));
  }
  absl::StatusOr<std::string> api_version = fields.String("apiVersion");
  if (!api_version.ok()) return api_version.status();
  // Absent: the version a new slice is written with, so that a slice read back is the same.
  slice.api_version =
      api_version->empty() ? absl::StrCat(kResourceGroup, "/v1") : *std::move(api_version);
  if (Json meta_json = fields.Take("metadata"); !meta_json.is_null()) {
    absl::StatusOr<ObjectMeta> meta = DecodeObjectMeta(meta_json);
    if (!meta.ok()) return meta.status();
    slice.metadata = *std::move(meta);
  }

  Json spec_json = fields.Take("spec");
  if (spec_json.is_null()) spec_json = Json::object();
  Fields spec(spec_json, "spec");
  if (absl::Status ok = spec.CheckObject(); !ok.ok()) return ok;
  ResourceSliceSpec& out = slice.spec;
  absl::StatusOr<std::string> driver = spec.String("driver");
  if (!driver.ok()) return driver.status();
  out.driver = *std::move(driver);

  Json pool_json = spec.Take("pool");
  if (pool_json.is_null()) pool_json = Json::object();
  Fields pool(pool_json, "spec.pool");
  if (absl::Status ok = pool.CheckObject(); !ok.ok()) return ok;
  absl::StatusOr<std::string> pool_name = pool.String("name");
  if (!pool_name.ok()) return pool_name.status();
  out.pool.name = *std::move(pool_name);
  absl::StatusOr<int64_t> generation = pool.Int("generation");
  if (!generation.ok()) return generation.status();
  out.pool.generation = *generation;
  absl::StatusOr<int64_t> count = pool.Int("resourceSliceCount");
  if (!count.ok()) return count.status();
  out.pool.resource_slice_count = *count;
  out.pool.extra = std::move(pool).Rest();

  absl::StatusOr<std::optional<std::string>> node_name = spec.OptionalString("nodeName");
  if (!node_name.ok()) return node_name.status();
  out.node_name = *std::move(node_name);
  Json selector = spec.Take("nodeSelector");
  if (!selector.is_null()) {
    if (!selector.is_object()) return FieldError("spec.nodeSelector", "must be an object");
    out.node_selector = std::move(selector);
  }
  absl::StatusOr<std::optional<bool>> all_nodes = spec.OptionalBool("allNodes");
  if (!all_nodes.ok()) return all_nodes.status();
  out.all_nodes = *all_nodes;
  absl::StatusOr<std::optional<bool>> per_device = spec.OptionalBool("perDeviceNodeSelection");
  if (!per_device.ok()) return per_device.status();
  out.per_device_node_selection = *per_device;
  absl::StatusOr<std::vector<Device>> devices = spec.List<Device>("devices", DecodeDevice);
  if (!devices.ok()) return devices.status();
  out.devices = *std::move(devices);
  absl::StatusOr<std::vector<CounterSet>> counters =
      spec.List<CounterSet>("sharedCounters", DecodeCounterSet);
  if (!counters.ok()) return counters.status();
  out.shared_counters = *std::move(counters);
  absl::StatusOr<std::vector<std::string>> skips = spec.StringList("skipNodeOperations");
  if (!skips.ok()) return skips.status();
  out.skip_node_operations = *std::move(skips);
  out.extra = std::move(spec).Rest();
  slice.extra = std::move(fields).Rest();
  return slice;
}

Json EncodeResourceSlice(const ResourceSlice& slice) {
  Json out = slice.extra;
  out["apiVersion"] =
      slice.api_version.empty() ? absl::StrCat(kResourceGroup, "/v1") : slice.api_version;
  out["kind"] = "ResourceSlice";
  out["metadata"] = EncodeObjectMeta(slice.metadata);
  const ResourceSliceSpec& in = slice.spec;
  Json spec = in.extra;
  spec["driver"] = in.driver;
  Json pool = in.pool.extra;
  pool["name"] = in.pool.name;
  pool["generation"] = in.pool.generation;
  pool["resourceSliceCount"] = in.pool.resource_slice_count;
  spec["pool"] = std::move(pool);
  if (in.node_name.has_value()) spec["nodeName"] = *in.node_name;
  if (in.node_selector.has_value()) spec["nodeSelector"] = *in.node_selector;
  if (in.all_nodes.has_value()) spec["allNodes"] = *in.all_nodes;
  if (in.per_device_node_selection.has_value()) {
    spec["perDeviceNodeSelection"] = *in.per_device_node_selection;
  }
  if (!in.devices.empty()) {
    Json devices = Json::array();
    for (const Device& device : in.devices) devices.push_back(EncodeDevice(device));
    spec["devices"] = std::move(devices);
  }
  if (!in.shared_counters.empty()) {
    Json sets = Json::array();
    for (const CounterSet& set : in.shared_counters) sets.push_back(EncodeCounterSet(set));
    spec["sharedCounters"] = std::move(sets);
  }
  if (!in.skip_node_operations.empty()) spec["skipNodeOperations"] = in.skip_node_operations;
  out["spec"] = std::move(spec);
  return out;
}

bool DevicesDeepEqual(const std::vector<Device>& a, const std::vector<Device>& b) {
  return DevicesEqual(a, b, TaintEqual);
}

bool DevicesSemanticEqual(const std::vector<Device>& a, const std::vector<Device>& b) {
  return DevicesEqual(a, b, TaintSemanticEqual);
}

bool CounterSetsEqual(const std::vector<CounterSet>& a, const std::vector<CounterSet>& b) {
  return std::equal(
      a.begin(), a.end(), b.begin(), b.end(), [](const CounterSet& x, const CounterSet& y) {
        return x.name == y.name && SemanticEqual(x.counters, y.counters, CounterQuantityFields()) &&
               SemanticEqual(x.extra, y.extra);
      });
}

bool NodeSelectorsEqual(const std::optional<Json>& a, const std::optional<Json>& b) {
  if (!a.has_value() || !b.has_value()) return a.has_value() == b.has_value();
  return SemanticEqual(*a, *b);
}

}  // namespace devmgr::kubeapi
