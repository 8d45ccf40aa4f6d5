#include "deviceplugin/device_tree.h"

#include <algorithm>
#include <utility>

#include "common/utf8.h"

namespace devmgr::deviceplugin {

absl::string_view HealthString(Health health) {
  return health == Health::kHealthy ? "Healthy" : "Unhealthy";
}

bool IsWireSafe(absl::string_view id, const DeviceInfo& info) {
  if (!ValidUtf8(id)) return false;
  for (const DeviceNode& node : info.nodes) {
    if (!ValidUtf8(node.host_path) || !ValidUtf8(node.container_path) ||
        !ValidUtf8(node.permissions)) {
      return false;
    }
  }
  for (const Mount& mount : info.mounts) {
    if (!ValidUtf8(mount.host_path) || !ValidUtf8(mount.container_path)) return false;
  }
  for (const auto* map : {&info.envs, &info.annotations}) {
    for (const auto& [key, value] : *map) {
      if (!ValidUtf8(key) || !ValidUtf8(value)) return false;
    }
  }
  return true;
}

void DeviceTree::AddDevice(const std::string& type, const std::string& id, DeviceInfo info) {
  types_[type][id] = std::move(info);
}

size_t DeviceTree::DeviceTypeCount(absl::string_view type) const {
  auto it = types_.find(type);
  return it == types_.end() ? 0 : it->second.size();
}

size_t DeviceTree::HealthyCount(absl::string_view type) const {
  const DeviceMap& devices = Devices(type);
  return static_cast<size_t>(std::count_if(devices.begin(), devices.end(), [](const auto& entry) {
    return entry.second.health == Health::kHealthy;
  }));
}

const DeviceMap& DeviceTree::Devices(absl::string_view type) const {
  static const DeviceMap kEmpty;
  auto it = types_.find(type);
  return it == types_.end() ? kEmpty : it->second;
}

}  // namespace devmgr::deviceplugin
