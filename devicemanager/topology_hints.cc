#include "devicemanager/topology_hints.h"

#include <algorithm>
#include <functional>

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

bool HasTopologyAlignment(const DeviceMap& devices) {
  return std::any_of(devices.begin(), devices.end(),
                     [](const auto& entry) { return !entry.second.numa_nodes.empty(); });
}

DevicesByAffinity FilterByAffinity(const std::set<std::string>& available, const DeviceMap& devices,
                                   const std::optional<NumaMask>& affinity) {
  DevicesByAffinity result;
  if (!HasTopologyAlignment(devices) || !affinity.has_value()) {
    result.no_topology = available;
    return result;
  }
  std::map<int64_t, std::set<std::string>> per_node;
  for (const auto& id : available) {
    auto it = devices.find(id);
    if (it == devices.end() || it->second.numa_nodes.empty()) {
      per_node[kFakeNode].insert(id);
      continue;
    }
    for (int64_t node : it->second.numa_nodes) per_node[node].insert(id);
  }
  std::vector<int64_t> nodes;
  for (const auto& [node, ids] : per_node) nodes.push_back(node);
  // Group rank: 0 in the affinity, 1 another real node, 2 the fake node.
  auto rank = [&](int64_t node) {
    if (affinity->Contains(node)) return 0;
    return node == kFakeNode ? 2 : 1;
  };
  std::stable_sort(nodes.begin(), nodes.end(), [&](int64_t a, int64_t b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    return per_node[a].size() < per_node[b].size();
  });
  for (const auto& id : available) {
    for (int64_t node : nodes) {
      if (!per_node[node].contains(id)) continue;
      if (node == kFakeNode) {
        result.no_topology.insert(id);
      } else if (affinity->Contains(node)) {
        result.aligned.insert(id);
      } else {
        result.unaligned.insert(id);
      }
      break;
    }
  }
  return result;
}

std::vector<TopologyHint> GenerateDeviceTopologyHints(const std::vector<int>& numa_nodes,
                                                      const DeviceMap& devices,
                                                      const std::set<std::string>& available,
                                                      const std::set<std::string>& reusable,
                                                      int64_t request) {
  int min_affinity_size = static_cast<int>(numa_nodes.size());
  std::vector<TopologyHint> hints;
  IterateMasks(numa_nodes, [&](const NumaMask& mask) {
    int64_t in_mask = 0;
    for (const auto& [id, device] : devices) {
      if (AnyNodeIn(mask, device)) ++in_mask;
    }
    if (in_mask >= request && mask.Count() < min_affinity_size) min_affinity_size = mask.Count();

    int64_t matching = 0;
    for (const auto& id : reusable) {
      auto it = devices.find(id);
      if (it == devices.end() || it->second.numa_nodes.empty()) continue;
      if (!AnyNodeIn(mask, it->second)) return;
      ++matching;
    }
    for (const auto& id : available) {
      auto it = devices.find(id);
      if (it != devices.end() && AnyNodeIn(mask, it->second)) ++matching;
    }
    if (matching < request) return;
    hints.push_back({mask, false});
  });
  for (auto& hint : hints) hint.preferred = hint.numa_affinity.Count() == min_affinity_size;
  return hints;
}

}  // namespace devmgr::devicemanager
