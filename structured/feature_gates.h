// Features: the optional parts of DRA the allocator implements, as the Kubernetes feature gates
// that switch them on. The defaults are those of a current cluster (Kubernetes 1.37): every gate
// on but four. DRAListTypeAttributes, DRAOptionalNodeOperations and DRAWorkloadResourceClaims
// are alpha, off.
// DRADeviceBindingConditions (beta, on in a cluster) is off: on a node without a scheduler nothing
// waits for a device's binding conditions before it is prepared, so such devices are not allocated
// unless it is asked for. DRAFractionalCapacityRange is beta and on since 1.37 (off only where a
// cluster emulates 1.36).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr::structured {

struct Features {
  bool admin_access = true;                  // DRAAdminAccess
  bool prioritized_list = true;              // DRAPrioritizedList
  bool partitionable_devices = true;         // DRAPartitionableDevices: shared counters
  bool device_taints = true;                 // DRADeviceTaints
  bool consumable_capacity = true;           // DRAConsumableCapacity
  bool device_binding_conditions = false;    // DRADeviceBindingConditions
  bool resource_claim_device_status = true;  // DRAResourceClaimDeviceStatus
  bool list_type_attributes = false;         // DRAListTypeAttributes
  // DRAOptionalNodeOperations: a ResourceSlice's skipNodeOperations. Off, its devices are not
  // allocated; on, the list goes into each of their results, and the node's DRA manager skips
  // those operations (dra::ManagerOptions::optional_node_operations).
  bool optional_node_operations = false;
  // DRAFractionalCapacityRange: a capacity's valid range steps in thousandths (see capacity.h).
  bool fractional_capacity_range = true;
  // DRAWorkloadResourceClaims (alpha): not the allocator's; the node's DRA manager lets a pod
  // use the claims of its PodGroup (dra::ManagerOptions::workload_resource_claims).
  bool workload_resource_claims = false;

  // Upstream's DeviceBindingAndStatus: a device's binding conditions are honoured with both of
  // their gates on.
  bool device_binding_and_status() const {
    return device_binding_conditions && resource_claim_device_status;
  }
};

// ParseFeatureGates applies "NAME=BOOL,..." (the gates' names above, read as a kubelet reads its
// --feature-gates: ParseFeatureGateList) to `features`. InvalidArgument with that reading's
// texts, or "unrecognized feature gate: NAME (known: ...)".
absl::StatusOr<Features> ParseFeatureGates(absl::string_view text, Features features = {});

// NewSelectorCost: kubeapi::SelectorCost as the API server's validation takes the selectors of
// an object it creates: compiled in CEL's environment for new expressions, where
// device.allowMultipleAllocations exists only with DRAConsumableCapacity on and includes() only
// with DRAListTypeAttributes on ("undefined field 'allowMultipleAllocations'", "undeclared
// reference to 'includes'"). A stored object's selectors may use both (cel::SelectorMaxCost).
// Passed as `NewSelectorCost{features}`.
struct NewSelectorCost {
  const Features& features;
  absl::StatusOr<uint64_t> operator()(const std::string& expression) const;
};

}  // namespace devmgr::structured
