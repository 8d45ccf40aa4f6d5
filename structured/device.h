// The allocator's view of the devices in ResourceSlices: each device's typed attributes,
// capacities, taints, counter consumption and node selection read once from the slice's JSON,
// and the value CEL selectors see of it (built once, evaluated by many selectors).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cel/value.h"
#include "kubeapi/quantity.h"
#include "kubeapi/resource_slice.h"

namespace devmgr::structured {

// DeviceID: driver/pool/device, unique in a cluster.
struct DeviceID {
  std::string driver;
  std::string pool;
  std::string device;

  auto operator<=>(const DeviceID&) const = default;
  bool operator==(const DeviceID&) const = default;
  std::string ToString() const { return driver + "/" + pool + "/" + device; }
  template <typename H>
  friend H AbslHashValue(H h, const DeviceID& id) {
    return H::combine(std::move(h), id.driver, id.pool, id.device);
  }
};

// Attribute: one typed attribute value: a scalar, or a list (list-type attributes). `values`
// holds each element's text (ints in decimal, bools as true/false, strings and versions as
// written), which is what equality between attributes compares, as upstream does. kUnknown: an
// attribute with no value this version knows (a selector on the device fails, a constraint
// cannot compare it).
struct Attribute {
  enum class Type { kInt, kBool, kString, kVersion, kUnknown };
  Type type = Type::kString;
  bool is_list = false;
  std::vector<std::string> values;
};

// capacity.<name>.requestPolicy (consumable capacity).
struct CapacityRequestPolicy {
  std::optional<kubeapi::Quantity> default_value;
  std::vector<kubeapi::Quantity> valid_values;
  struct Range {
    std::optional<kubeapi::Quantity> min;
    std::optional<kubeapi::Quantity> max;
    std::optional<kubeapi::Quantity> step;
  };
  std::optional<Range> valid_range;
};

struct DeviceCapacity {
  kubeapi::Quantity value;
  std::optional<CapacityRequestPolicy> request_policy;
};

// counter name -> amount, as in a counter set or a device's consumption of one.
using Counters = std::map<std::string, kubeapi::Quantity>;

struct CounterConsumption {
  std::string counter_set;
  Counters counters;
};

struct DeviceInfo {
  std::string name;
  // By qualified name as the slice writes it ("model" or "gpu.example.com/model").
  std::map<std::string, Attribute> attributes;
  std::map<std::string, DeviceCapacity> capacity;
  std::vector<kubeapi::DeviceTaint> taints;
  std::vector<CounterConsumption> consumes_counters;
  // Per-device node selection (a slice with perDeviceNodeSelection).
  std::string node_name;
  std::optional<nlohmann::json> node_selector;
  bool all_nodes = false;
  bool binds_to_node = false;
  std::vector<std::string> binding_conditions;
  std::vector<std::string> binding_failure_conditions;
  std::optional<bool> allow_multiple_allocations;
  // The value of `device` for selectors, or why there is none ("attribute x: parse semantic
  // version: ..."), which a selector evaluated on the device reports.
  absl::StatusOr<cel::Value> cel_value = cel::Value();
};

// One ResourceSlice as the allocator reads it.
struct SliceInfo {
  std::string name;
  std::string driver;
  std::string pool;
  int64_t generation = 0;
  int64_t slice_count = 0;
  std::string node_name;
  std::optional<nlohmann::json> node_selector;
  bool all_nodes = false;
  // perDeviceNodeSelection as written (a slice that sets it, even to false, needs the
  // partitionable-devices feature).
  std::optional<bool> per_device_node_selection;
  // spec.skipNodeOperations: copied into the result of each device allocated from the slice;
  // its devices are not allocated without the DRAOptionalNodeOperations feature.
  std::vector<std::string> skip_node_operations;
  std::vector<DeviceInfo> devices;
  // sharedCounters: set name -> counters, in the slice's order.
  std::vector<std::pair<std::string, Counters>> shared_counters;
  // Not empty: why the slice cannot be read (what the API server's validation would have
  // refused: a capacity that is not a quantity, an attribute of the wrong type); its pool is
  // invalid.
  std::string invalid_reason;
};

// ReadSlice reads a slice's devices once for every allocation.
std::shared_ptr<const SliceInfo> ReadSlice(const kubeapi::ResourceSlice& slice);

// LookupAttribute: upstream's lookupAttribute: `name` is fully qualified (domain/id); a device
// of the driver of that domain may have it under the bare id. nullptr: the device has none.
const Attribute* LookupAttribute(const DeviceInfo& device, const std::string& driver,
                                 const std::string& name);

}  // namespace devmgr::structured
