#include "deviceplugin/preferred_allocation.h"

#include <cstdint>
#include <map>
#include <set>

namespace devmgr::deviceplugin {
namespace {

const std::vector<int64_t>& NumaOf(const DeviceMap& devices, const std::string& id) {
  static const std::vector<int64_t> kNone;
  auto it = devices.find(id);
  return it == devices.end() ? kNone : it->second.numa_nodes;
}

}  // namespace

std::vector<std::string> PreferNumaLocal(
    const DeviceMap& devices, const v1beta1::ContainerPreferredAllocationRequest& request) {
  const size_t size =
      request.allocation_size() > 0 ? static_cast<size_t>(request.allocation_size()) : 0;
  std::vector<std::string> picked;
  std::set<std::string> taken;
  std::set<int64_t> nodes;
  auto take = [&](const std::string& id) {
    if (picked.size() >= size || !taken.insert(id).second) return;
    picked.push_back(id);
    for (int64_t node : NumaOf(devices, id)) nodes.insert(node);
  };
  for (const std::string& id : request.must_include_deviceids()) take(id);

  if (nodes.empty()) {
    std::map<int64_t, size_t> offered_per_node;
    for (const std::string& id : request.available_deviceids()) {
      for (int64_t node : NumaOf(devices, id)) ++offered_per_node[node];
    }
    size_t best = 0;
    for (const auto& [node, count] : offered_per_node) {
      if (count > best) {
        best = count;
        nodes = {node};
      }
    }
  }
  for (const std::string& id : request.available_deviceids()) {
    if (picked.size() >= size) break;
    for (int64_t node : NumaOf(devices, id)) {
      if (nodes.count(node) != 0) {
        take(id);
        break;
      }
    }
  }
  for (const std::string& id : request.available_deviceids()) {
    if (picked.size() >= size) break;
    take(id);
  }
  return picked;
}

}  // namespace devmgr::deviceplugin
