// Topology for pod admission, as upstream's topology_hints.go and filterByAffinity: the hint
// type a host topology manager merges, the interface through which the host tells the device
// manager which NUMA affinity it admitted for a container, and the pure functions that split
// devices by that affinity and generate hints from a resource's devices. No state, no locks.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "devicemanager/device_table.h"
#include "devicemanager/id_set.h"
#include "devicemanager/numa_mask.h"
#include "devicemanager/types.h"

namespace devmgr::devicemanager {

// TopologyHint is upstream's topologymanager.TopologyHint: an affinity that can satisfy a
// request, preferred when it uses as few NUMA nodes as the request needs at least.
struct TopologyHint {
  NumaMask numa_affinity;
  bool preferred = false;

  bool operator==(const TopologyHint&) const = default;
};

// The most NUMA nodes hints are generated over by default, as upstream's topology manager
// (defaultMaxAllowableNUMANodes): beyond it a resource has no preference
// (ManagerOptions::max_allowable_numa_nodes).
inline constexpr size_t kMaxNumaNodesForHints = 8;

// Resource name -> its hints. nullopt means "no preference" (upstream's nil: the resource's
// devices have no topology); an empty vector means "cannot be satisfied".
using TopologyHints = std::map<std::string, std::optional<std::vector<TopologyHint>>>;

// TopologyAffinityStore is implemented by the host's topology manager: the NUMA affinity it
// admitted for one container, or nullopt when it has none (upstream's nil NUMANodeAffinity,
// e.g. policy "none"). Called during Allocate, from the host's admission thread, without any
// manager lock held; it must not call back into the Manager. Must be thread-safe.
class TopologyAffinityStore {
 public:
  virtual ~TopologyAffinityStore() = default;
  virtual std::optional<NumaMask> GetAffinity(absl::string_view pod_uid,
                                              absl::string_view container_name) const = 0;
};

// HasTopologyAlignment: some device of the resource reports NUMA nodes (upstream's
// deviceHasTopologyAlignment).
bool HasTopologyAlignment(const DeviceTable& devices);

// DevicesByAffinity is filterByAffinity's answer: the available devices split in three.
struct DevicesByAffinity {
  IdSet aligned;    // on a NUMA node of the affinity
  IdSet unaligned;  // on real NUMA nodes, none in the affinity
  IdSet no_topology;
};

// FilterByAffinity splits `available` as upstream's filterByAffinity: without topology in
// `devices` or without an affinity everything is no_topology. Otherwise nodes are ordered
// (affinity nodes, other nodes, then the fake node -1 of topology-less devices; fewer devices
// first within a group, node ID breaking ties) and each device goes to the list of the first
// node that has it.
DevicesByAffinity FilterByAffinity(const IdSet& available, const DeviceTable& devices,
                                   const std::optional<NumaMask>& affinity);

// GenerateDeviceTopologyHints is upstream's generateDeviceTopologyHints: for each mask over
// `numa_nodes` (by size, then lexicographically), a hint when every reusable device with
// topology lies in it and reusable + available devices in it reach `request`; preferred when
// its node count is the smallest that holds `request` devices of `devices` (any health).
std::vector<TopologyHint> GenerateDeviceTopologyHints(const std::vector<int>& numa_nodes,
                                                      const DeviceTable& devices,
                                                      const std::set<std::string>& available,
                                                      const std::set<std::string>& reusable,
                                                      int64_t request);

}  // namespace devmgr::devicemanager
