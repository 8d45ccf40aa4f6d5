#include "devicemanager/device_snapshot.h"

#include <algorithm>
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
  // Ordered by ID first (a stable sort, so repeated IDs keep the plugin's order), so that
  // every map and set below is built by appending at its end, not by a search per device.
  std::vector<Device*> by_id;
  by_id.reserve(devices.size());
  for (Device& device : devices) by_id.push_back(&device);
  auto id_less = [](const Device* a, const Device* b) { return a->id < b->id; };
  if (!std::is_sorted(by_id.begin(), by_id.end(), id_less)) {
    std::stable_sort(by_id.begin(), by_id.end(), id_less);
  }
  DeviceSnapshot snapshot;
  for (size_t i = 0; i < by_id.size(); ++i) {
    // Of a run of one ID, only the last entry counts; its health decides the split.
    if (i + 1 < by_id.size() && by_id[i + 1]->id == by_id[i]->id) continue;
    Device& device = *by_id[i];
    std::set<std::string>& split =
        device.health == Health::kHealthy ? snapshot.healthy : snapshot.unhealthy;
    split.insert(split.end(), device.id);
    std::string id = device.id;
    snapshot.all.emplace_hint(snapshot.all.end(), std::move(id), std::move(device));
  }
  return snapshot;
}

}  // namespace devmgr::devicemanager
