#include "devicemanager/device_snapshot.h"

#include <utility>

namespace devmgr::devicemanager {

std::vector<Device> DevicesFromWire(const v1beta1::ListAndWatchResponse& response) {
  std::vector<Device> devices;
  devices.reserve(static_cast<size_t>(response.devices_size()));
  for (const auto& wire : response.devices()) {
    Device& device = devices.emplace_back();
    device.id = wire.id();
    device.health = wire.health() == "Healthy" ? Health::kHealthy : Health::kUnhealthy;
    if (!wire.has_topology()) continue;
    // A set, not a search of the list: a hostile plugin may list millions of nodes.
    std::set<int64_t> seen;
    for (const auto& node : wire.topology().nodes()) {
      if (seen.insert(node.id()).second) device.numa_nodes.push_back(node.id());
    }
  }
  return devices;
}

DeviceSnapshot MakeDeviceSnapshot(std::vector<Device>&& devices) {
  DeviceSnapshot snapshot;
  for (auto& device : devices) {
    std::string id = device.id;
    snapshot.all.insert_or_assign(std::move(id), std::move(device));
  }
  // Split after de-duplication, so that an ID's health is that of its last entry only.
  for (const auto& [id, device] : snapshot.all) {
    (device.health == Health::kHealthy ? snapshot.healthy : snapshot.unhealthy).insert(id);
  }
  return snapshot;
}

}  // namespace devmgr::devicemanager
