// The DRA allocator in the bench's process, as `devmgr serve` runs it for a pod whose claims
// nothing allocated (node/claim_allocator.h), on the node of allocation_fixture.h.
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/driver/allocation_fixture.h"
#include "bench/driver/harness.h"
#include "bench/driver/measurements.h"

namespace devmgr::bench {

absl::Status MeasureAllocator(const Options& flags, std::vector<Row>& rows) {
  for (const int devices : kAllocatorDevices) {
    const std::vector<kubeapi::ResourceSlicePtr> slices = GpuSlices(devices);
    const std::vector<kubeapi::DeviceClass> classes = GpuClass();
    const kubeapi::ResourceClaim claim = ConstrainedClaim(kAllocatorRequests);
    const SelectorFloor selectors(devices, kAllocatorRequests);
    std::vector<double> measured;
    std::vector<double> floor;
    int matched = 0;
    for (int i = 0; i < flags.samples; ++i) {
      auto start = Clock::now();
      if (absl::Status status = AllocateOnce(slices, classes, claim); !status.ok()) return status;
      measured.push_back(MicrosSince(start));
      start = Clock::now();
      matched = selectors.Evaluate();
      floor.push_back(MicrosSince(start));
    }
    if (matched == 0) return absl::InternalError("the floor's selectors matched no device");
    rows.push_back(Timed(absl::StrCat("DRA allocate 1 claim x ", kAllocatorRequests,
                                      " requests, matchAttribute, ", devices, " devices"),
                         measured, floor,
                         "its selectors alone on every device, compiled and converted once"));
  }
  return absl::OkStatus();
}

}  // namespace devmgr::bench
