#include "deviceplugin/device_tree.h"

#include <algorithm>
#include <utility>

namespace devmgr::deviceplugin {

absl::string_view HealthString(Health health) {
  return health == Health::kHealthy ? "Healthy" : "Unhealthy";
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
