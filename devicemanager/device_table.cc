#include "devicemanager/device_table.h"

#include <algorithm>
#include <utility>

namespace devmgr::devicemanager {

DeviceTable::DeviceTable(std::vector<Device> devices) : devices_(std::move(devices)) {
  // One pass for the usual snapshot, already ascending by ID without repeats.
  auto not_ascending = [](const Device& a, const Device& b) { return !(a.id < b.id); };
  if (std::adjacent_find(devices_.begin(), devices_.end(), not_ascending) != devices_.end()) {
    // Stable, so that the entries of a repeated ID keep the plugin's order; of each run of one
    // ID only the last is kept.
    std::stable_sort(devices_.begin(), devices_.end(),
                     [](const Device& a, const Device& b) { return a.id < b.id; });
    size_t kept = 0;
    for (size_t i = 0; i < devices_.size(); ++i) {
      if (i + 1 < devices_.size() && devices_[i + 1].id == devices_[i].id) continue;
      if (kept != i) devices_[kept] = std::move(devices_[i]);
      ++kept;
    }
    devices_.resize(kept);
  }
  healthy_count_ =
      static_cast<size_t>(std::count_if(devices_.begin(), devices_.end(), [](const Device& device) {
        return device.health == Health::kHealthy;
      }));
}

const Device* DeviceTable::Find(absl::string_view id) const {
  auto it =
      std::lower_bound(devices_.begin(), devices_.end(), id,
                       [](const Device& device, absl::string_view b) { return device.id < b; });
  return it != devices_.end() && it->id == id ? &*it : nullptr;
}

bool DeviceTable::IsHealthy(absl::string_view id) const {
  const Device* device = Find(id);
  return device != nullptr && device->health == Health::kHealthy;
}

std::vector<std::string> DeviceTable::HealthyIds() const {
  std::vector<std::string> ids;
  ids.reserve(healthy_count_);
  for (const Device& device : devices_) {
    if (device.health == Health::kHealthy) ids.push_back(device.id);
  }
  return ids;
}

void DeviceTable::MarkAllUnhealthy() {
  for (Device& device : devices_) device.health = Health::kUnhealthy;
  healthy_count_ = 0;
}

}  // namespace devmgr::devicemanager
