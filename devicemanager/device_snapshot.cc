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

DeviceSnapshot MakeDeviceSnapshot(std::vector<Device>&& devices) {
  DeviceSnapshot snapshot;
  snapshot.all = DeviceTable(std::move(devices));
  // The table is ordered by ID with each ID once, so each split is too.
  const auto healthy_count =
      std::count_if(snapshot.all.begin(), snapshot.all.end(),
                    [](const Device& device) { return device.health == Health::kHealthy; });
  std::vector<std::string> healthy;
  std::vector<std::string> unhealthy;
  healthy.reserve(static_cast<size_t>(healthy_count));
  unhealthy.reserve(snapshot.all.size() - static_cast<size_t>(healthy_count));
  for (const Device& device : snapshot.all) {
    (device.health == Health::kHealthy ? healthy : unhealthy).push_back(device.id);
  }
  snapshot.healthy = IdSet(std::move(healthy));
  snapshot.unhealthy = IdSet(std::move(unhealthy));
  return snapshot;
}

}  // namespace devmgr::devicemanager
