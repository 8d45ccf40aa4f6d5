// Features: the optional parts of DRA the allocator implements, as the Kubernetes feature gates
// that switch them on. The defaults are those of a current cluster: admin access and
// prioritized lists (firstAvailable) on, the rest off until asked for.
#pragma once

namespace devmgr::structured {

struct Features {
  bool admin_access = true;            // DRAAdminAccess
  bool prioritized_list = true;        // DRAPrioritizedList
  bool partitionable_devices = false;  // DRAPartitionableDevices: shared counters
  bool device_taints = false;          // DRADeviceTaints
  bool consumable_capacity = false;    // DRAConsumableCapacity
  // DRADeviceBindingConditions + DRAResourceClaimDeviceStatus.
  bool device_binding_and_status = false;
  bool list_type_attributes = false;  // DRAListTypeAttributes
};

}  // namespace devmgr::structured
