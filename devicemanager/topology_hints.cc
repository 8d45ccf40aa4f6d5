#include "devicemanager/topology_hints.h"

#include <algorithm>
#include <functional>
#include <tuple>

#include "absl/container/flat_hash_map.h"

namespace devmgr::devicemanager {
namespace {

constexpr int64_t kFakeNode = -1;

bool AnyNodeIn(const NumaMask& mask, const Device& device) {
  for (int64_t node : device.numa_nodes) {
    if (mask.Contains(node)) return true;
  }
  return false;
}

// Calls `fn` with every non-empty subset of `nodes`, smallest first, each size in
// lexicographic order of positions (as upstream's bitmask.IterateBitMasks).
void IterateMasks(const std::vector<int>& nodes, const std::function<void(const NumaMask&)>& fn) {
  const int n = static_cast<int>(nodes.size());
  std::vector<int> picked;
  std::function<void(int, int)> choose = [&](int start, int remaining) {
    if (remaining == 0) {
      NumaMask mask;
      for (int i : picked) mask.Add(nodes[static_cast<size_t>(i)]);
      fn(mask);
      return;
    }
    for (int i = start; i <= n - remaining; ++i) {
      picked.push_back(i);
      choose(i + 1, remaining - 1);
      picked.pop_back();
    }
  };
  for (int size = 1; size <= n; ++size) choose(0, size);
}

}  // namespace

bool HasTopologyAlignment(const DeviceTable& devices) {
  return std::any_of(devices.begin(), devices.end(),
                     [](const Device& device) { return !device.numa_nodes.empty(); });
}

DevicesByAffinity FilterByAffinity(const IdSet& available, const DeviceTable& devices,
                                   const std::optional<NumaMask>& affinity) {
  DevicesByAffinity result;
  if (!HasTopologyAlignment(devices) || !affinity.has_value()) {
    result.no_topology = available;
    return result;
  }
  // Both `available` and `devices` are ordered by ID: one walk pairs each available ID with
  // its NUMA nodes (none: the fake node), counting the devices of every node.
  std::vector<const std::vector<int64_t>*> nodes_of;
  nodes_of.reserve(available.size());
  // Looked up once per device and node: hashed, not a tree search.
  absl::flat_hash_map<int64_t, size_t> node_devices;
  const std::vector<int64_t> fake_node = {kFakeNode};
  auto device = devices.begin();
  for (const auto& id : available) {
    while (device != devices.end() && device->id < id) ++device;
    const bool known = device != devices.end() && device->id == id && !device->numa_nodes.empty();
    const std::vector<int64_t>& nodes = known ? device->numa_nodes : fake_node;
    nodes_of.push_back(&nodes);
    for (int64_t node : nodes) ++node_devices[node];
  }
  std::vector<int64_t> order;
  order.reserve(node_devices.size());
  for (const auto& [node, count] : node_devices) order.push_back(node);
  // Group rank: 0 in the affinity, 1 another real node, 2 the fake node.
  auto rank = [&](int64_t node) {
    if (affinity->Contains(node)) return 0;
    return node == kFakeNode ? 2 : 1;
  };
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return std::tuple(rank(a), node_devices.at(a), a) < std::tuple(rank(b), node_devices.at(b), b);
  });
  absl::flat_hash_map<int64_t, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  // Each device goes to its node that comes first; appending keeps every list ordered.
  std::vector<std::string> aligned;
  std::vector<std::string> unaligned;
  std::vector<std::string> no_topology;
  size_t i = 0;
  for (const auto& id : available) {
    int64_t first = kFakeNode;
    size_t first_position = order.size();
    for (int64_t node : *nodes_of[i++]) {
      const size_t node_position = position.at(node);
      if (node_position < first_position) {
        first_position = node_position;
        first = node;
      }
    }
    std::vector<std::string>& list = first == kFakeNode          ? no_topology
                                     : affinity->Contains(first) ? aligned
                                                                 : unaligned;
    list.push_back(id);
  }
  result.aligned = IdSet(std::move(aligned));
  result.unaligned = IdSet(std::move(unaligned));
  result.no_topology = IdSet(std::move(no_topology));
  return result;
}

std::vector<TopologyHint> GenerateDeviceTopologyHints(const std::vector<int>& numa_nodes,
                                                      const DeviceTable& devices,
                                                      const std::set<std::string>& available,
                                                      const std::set<std::string>& reusable,
                                                      int64_t request) {
  int min_affinity_size = static_cast<int>(numa_nodes.size());
  std::vector<TopologyHint> hints;
  IterateMasks(numa_nodes, [&](const NumaMask& mask) {
    int64_t in_mask = 0;
    for (const Device& device : devices) {
      if (AnyNodeIn(mask, device)) ++in_mask;
    }
    if (in_mask >= request && mask.Count() < min_affinity_size) min_affinity_size = mask.Count();

    int64_t matching = 0;
    for (const auto& id : reusable) {
      const Device* device = devices.Find(id);
      if (device == nullptr || device->numa_nodes.empty()) continue;
      if (!AnyNodeIn(mask, *device)) return;
      ++matching;
    }
    for (const auto& id : available) {
      const Device* device = devices.Find(id);
      if (device != nullptr && AnyNodeIn(mask, *device)) ++matching;
    }
    if (matching < request) return;
    hints.push_back({mask, false});
  });
  for (auto& hint : hints) hint.preferred = hint.numa_affinity.Count() == min_affinity_size;
  return hints;
}

}  // namespace devmgr::devicemanager
