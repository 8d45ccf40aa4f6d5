#include "devicemanager/device_snapshot.h"

#include <algorithm>
#include <set>
#include <utility>

namespace devmgr::devicemanager {
namespace {

constexpr int kNodesSearchedInPlace = 16;

}  // namespace

std::vector<Device> DevicesFromWire(const v1beta1::ListAndWatchResponse& response) {
  std::vector<Device> devices;
  devices.reserve(static_cast<size_t>(response.devices_size()));
  for (const auto& wire : response.devices()) {
    Device& device = devices.emplace_back();
    device.id = wire.id();
    device.health = wire.health() == "Healthy" ? Health::kHealthy : Health::kUnhealthy;
    if (!wire.has_topology()) continue;
    const auto& nodes = wire.topology().nodes();
    // A real device lists a node or two, searched in place; a hostile plugin may list
    // millions, which go through a set.
    if (nodes.size() <= kNodesSearchedInPlace) {
      for (const auto& node : nodes) {
        if (std::find(device.numa_nodes.begin(), device.numa_nodes.end(), node.id()) ==
            device.numa_nodes.end()) {
          device.numa_nodes.push_back(node.id());
        }
      }
      continue;
    }
    std::set<int64_t> seen;
    for (const auto& node : nodes) {
      if (seen.insert(node.id()).second) device.numa_nodes.push_back(node.id());
    }
  }
  return devices;
}

}  // namespace devmgr::devicemanager
