// DeviceTable: every device of one resource as its plugin's last snapshot described it, kept
// as one array sorted by ID. A plugin can report 100,000 devices and replaces all of them in
// every snapshot, so the table is built in one allocation instead of a tree node per device,
// and found by bisection. It is also the only record of which devices are healthy: the
// healthy IDs are read from it rather than kept a second time. A value type; not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "devicemanager/types.h"

namespace devmgr::devicemanager {

class DeviceTable {
 public:
  using value_type = Device;
  using iterator = std::vector<Device>::const_iterator;
  using const_iterator = std::vector<Device>::const_iterator;

  DeviceTable() = default;
  // `devices` in any order; of an ID listed more than once, its last entry is kept.
  explicit DeviceTable(std::vector<Device> devices);

  // Find: the device with ID `id`, or null.
  const Device* Find(absl::string_view id) const;
  // IsHealthy: whether the table holds `id` and the device is healthy.
  bool IsHealthy(absl::string_view id) const;
  size_t size() const { return devices_.size(); }
  size_t healthy_count() const { return healthy_count_; }
  // HealthyIds: the IDs of the healthy devices, in order.
  std::vector<std::string> HealthyIds() const;
  bool empty() const { return devices_.empty(); }
  // In ID order.
  const_iterator begin() const { return devices_.begin(); }
  const_iterator end() const { return devices_.end(); }

  // MarkAllUnhealthy: every device becomes unhealthy (its plugin went away).
  void MarkAllUnhealthy();

  bool operator==(const DeviceTable&) const = default;

 private:
  std::vector<Device> devices_;
  size_t healthy_count_ = 0;
};

}  // namespace devmgr::devicemanager
