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
    device.numa_nodes.reserve(static_cast<size_t>(wire.topology().nodes_size()));
    for (const auto& node : wire.topology().nodes()) device.numa_nodes.push_back(node.id());
  }
  return devices;
}

DeviceSnapshot MakeDeviceSnapshot(std::vector<Device>&& devices) {
  DeviceSnapshot snapshot;
  for (auto& device : devices) {
    (device.health == Health::kHealthy ? snapshot.healthy : snapshot.unhealthy).insert(device.id);
    std::string id = device.id;
    snapshot.all.insert_or_assign(std::move(id), std::move(device));
  }
  return snapshot;
}

}  // namespace devmgr::devicemanager
