// What a DRA driver wants published (upstream's resourceslice.DriverResources): its pools, each
// a list of slices of devices, and the owner of the ResourceSlices that carry them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kubeapi/resource_slice.h"

namespace devmgr::resourceslice {

// Slice: one ResourceSlice's worth of devices (at most 128, as the API allows) or counter sets.
struct Slice {
  std::vector<kubeapi::Device> devices;
  std::vector<kubeapi::CounterSet> shared_counters;
  std::optional<bool> per_device_node_selection;
  // spec.skipNodeOperations (DRAOptionalNodeOperations): the node operations the slice's devices
  // need not have, for a driver with no node plugin ("*", or "NodeUnprepareResources" with or
  // without "NodePrepareResources").
  std::vector<std::string> skip_node_operations = {};

  bool operator==(const Slice&) const = default;
};

// Pool: the slices of one pool, in order: slice i's ResourceSlice name starts with index i, and
// the allocator tries earlier slices first.
struct Pool {
  // At most one of node_selector and all_nodes; neither for a pool of a Node owner.
  std::optional<kubeapi::Json> node_selector;
  bool all_nodes = false;
  // Zero lets the controller choose; a larger one than published is taken as it is.
  int64_t generation = 0;
  std::vector<Slice> slices;

  bool operator==(const Pool&) const = default;
};

// DriverResources: every pool the driver publishes, by name. A pool that is left out has its
// ResourceSlices deleted; an empty pool (no slices) is different from no pool.
struct DriverResources {
  std::map<std::string, Pool> pools;

  bool operator==(const DriverResources&) const = default;
};

// Owner: the object the ResourceSlices are owned by (garbage-collected with it). For a Node
// (apiVersion v1, kind Node) the slices also get spec.nodeName, and an empty uid is looked up.
struct Owner {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;

  bool IsNode() const { return api_version == "v1" && kind == "Node"; }
  bool operator==(const Owner&) const = default;
};

}  // namespace devmgr::resourceslice
