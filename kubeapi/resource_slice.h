// ResourceSlice (resource.k8s.io/v1; a v1beta2 or v1beta1 object is read in v1's shape,
// resource_versions.h) as a C++ value, with the parts of ObjectMeta that controllers write, and
// its JSON codec.
//
// Only what devmgr reads or writes is modelled: the pool, the node selection, each device's
// name, taints and counter consumption, the shared counter sets. Every other field, at every
// level, is kept as it came in `extra` and written back unchanged, so that an update never drops
// what a newer API server (or another writer) put there.
//
// Equality: operator== compares everything exactly, extras included. What a controller compares
// with what the API server stored goes through the functions at the end, upstream's
// apiequality.Semantic (kubeapi/semantic_equal.h: absent and empty are one value, quantities by
// their value); DevicesDeepEqual adds upstream's taint rule: a taint without timeAdded equals one
// with it, and times within a second of each other are equal.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kubeapi/object_meta.h"
#include "nlohmann/json.hpp"

namespace devmgr::kubeapi {

inline constexpr char kResourceGroup[] = "resource.k8s.io";

// spec.pool.
struct ResourcePool {
  std::string name;
  int64_t generation = 0;
  int64_t resource_slice_count = 0;
  Json extra = Json::object();

  bool operator==(const ResourcePool&) const = default;
};

// spec.devices[].taints[].
struct DeviceTaint {
  std::string key;
  std::string value;
  std::string effect;
  // RFC 3339, as the API server writes it; std::nullopt before the server set it.
  std::optional<std::string> time_added;
  Json extra = Json::object();

  bool operator==(const DeviceTaint&) const = default;
};

// spec.devices[].consumesCounters[]: `counters` maps counter name -> {value}.
struct DeviceCounterConsumption {
  std::string counter_set;
  Json counters = Json::object();
  Json extra = Json::object();

  bool operator==(const DeviceCounterConsumption&) const = default;
};

// spec.devices[]: attributes, capacity, node selection and the rest are in `extra`.
struct Device {
  std::string name;
  std::vector<DeviceTaint> taints;
  std::vector<DeviceCounterConsumption> consumes_counters;
  Json extra = Json::object();

  bool operator==(const Device&) const = default;
};

// spec.sharedCounters[]: `counters` maps counter name -> {value}.
struct CounterSet {
  std::string name;
  Json counters = Json::object();
  Json extra = Json::object();

  bool operator==(const CounterSet&) const = default;
};

struct ResourceSliceSpec {
  std::string driver;
  ResourcePool pool;
  std::optional<std::string> node_name;
  // A core/v1 NodeSelector, kept as JSON.
  std::optional<Json> node_selector;
  std::optional<bool> all_nodes;
  std::optional<bool> per_device_node_selection;
  std::vector<Device> devices;
  std::vector<CounterSet> shared_counters;
  // skipNodeOperations (DRAOptionalNodeOperations): node operations its devices need not have,
  // "NodePrepareResources", "NodeUnprepareResources" or "*" (all).
  std::vector<std::string> skip_node_operations;
  Json extra = Json::object();

  bool operator==(const ResourceSliceSpec&) const = default;
};

struct ResourceSlice {
  // The apiVersion it was read with (resource.k8s.io/v1 when it had none or was read from an
  // older version), written back as is; empty in a slice made here: resource.k8s.io/v1.
  std::string api_version;
  ObjectMeta metadata;
  ResourceSliceSpec spec;
  Json extra = Json::object();

  bool operator==(const ResourceSlice&) const = default;
};

// A slice shared by those that read it (a watch's copy, a sync in progress); never changed.
using ResourceSlicePtr = std::shared_ptr<const ResourceSlice>;

// DecodeResourceSlice reads one ResourceSlice object. InvalidArgument naming the field for a
// wrong type or a kind that is not ResourceSlice.
absl::StatusOr<ResourceSlice> DecodeResourceSlice(const Json& object);
// EncodeResourceSlice writes it back: the extras, with the modelled fields over them (absent
// optional fields and empty lists are left out, as the API's omitempty does).
Json EncodeResourceSlice(const ResourceSlice& slice);

// One device or counter set on its own (`field` names it in errors).
Json EncodeDevice(const Device& device);
absl::StatusOr<Device> DecodeDevice(const Json& object, const std::string& field);
Json EncodeCounterSet(const CounterSet& set);

// DevicesDeepEqual: upstream's resourceslice.DevicesDeepEqual.
bool DevicesDeepEqual(const std::vector<Device>& a, const std::vector<Device>& b);
// DevicesSemanticEqual, CounterSetsEqual, NodeSelectorsEqual: apiequality.Semantic.DeepEqual of
// spec.devices (taint times compared as times), spec.sharedCounters, spec.nodeSelector.
bool DevicesSemanticEqual(const std::vector<Device>& a, const std::vector<Device>& b);
bool CounterSetsEqual(const std::vector<CounterSet>& a, const std::vector<CounterSet>& b);
bool NodeSelectorsEqual(const std::optional<Json>& a, const std::optional<Json>& b);

}  // namespace devmgr::kubeapi
