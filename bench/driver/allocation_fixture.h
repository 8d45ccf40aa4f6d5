// The node the DRA allocator is measured on, shared by `devmgr bench` (step allocator) and
// bench/allocator_bench: one driver's GPUs in slices of 128, as drivers publish them, one device
// class, and claims whose requests select by attribute and by a capacity Quantity under a
// matchAttribute constraint. The allocator reads them as a node without a scheduler does
// (node/claim_allocator.h); the floor reads the same devices already converted for CEL.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "cel/program.h"
#include "kubeapi/resource_claim.h"
#include "kubeapi/resource_slice.h"

namespace devmgr::bench {

inline constexpr char kAllocationDriver[] = "gpu.example.com";
// The class's selector, and each request's: an a100 with 40Gi or more.
inline constexpr char kClassSelector[] = "device.driver == \"gpu.example.com\"";
inline constexpr char kRequestSelector[] =
    "device.attributes[\"gpu.example.com\"].model == \"a100\" && "
    "device.capacity[\"gpu.example.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0";

// GpuSlices: `devices` devices "gpu-<i>" of pool "node" in slices of 128. Device i is an a100
// (every eighth a t4) with 40Gi (even i) or 80Gi of memory, on NUMA node 0 (the first half of
// the devices) or 1; its attribute "index" is i.
std::vector<kubeapi::ResourceSlicePtr> GpuSlices(int devices);

// GpuClass: the device class kAllocationDriver, selecting with kClassSelector.
std::vector<kubeapi::DeviceClass> GpuClass();

// ConstrainedClaim: `requests` requests "r0".. of one device each, selected by kRequestSelector,
// all on one NUMA node (matchAttribute gpu.example.com/numa).
kubeapi::ResourceClaim ConstrainedClaim(int requests);

// AllocateOnce is what a node pays to allocate `claim`: an allocator made from `slices` and
// `classes` (every device converted for CEL, the selectors compiled), then the search. An error
// when it finds no allocation.
absl::Status AllocateOnce(const std::vector<kubeapi::ResourceSlicePtr>& slices,
                          const std::vector<kubeapi::DeviceClass>& classes,
                          const kubeapi::ResourceClaim& claim);

// SelectorFloor: the floor of AllocateOnce for a ConstrainedClaim: the class's selector and each
// request's evaluated once per device, compiled once, on the devices of GpuSlices already
// converted for CEL. No search does less.
class SelectorFloor {
 public:
  SelectorFloor(int devices, int requests);
  // Evaluate runs every selector on every device and returns how many matched.
  int Evaluate() const;

 private:
  std::vector<cel::Value> devices_;
  int requests_;
  std::shared_ptr<const cel::Program> class_selector_;
  std::shared_ptr<const cel::Program> request_selector_;
};

}  // namespace devmgr::bench
