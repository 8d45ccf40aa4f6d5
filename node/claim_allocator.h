// ClaimAllocator: on a node without a scheduler (no API server), allocates the ResourceClaims a
// pod brings without status.allocation, as the scheduler would: from the ResourceSlices the
// node's own DRA drivers publish (the local store) and the DeviceClasses in a file or folder,
// with the devices of the claims the node already holds taken (structured/allocator.h).
//
// Thread-safety: Allocate may be called from any thread; the caller serialises allocations with
// the recording of their results (PodAdmission does), or two pods could be given one device.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dra/claim.h"
#include "kubeapi/resource_claim.h"
#include "node/pod_claims.h"
#include "resourceslice/slice_store.h"
#include "structured/feature_gates.h"

namespace devmgr::node {

struct ClaimAllocatorOptions {
  std::string node_name;
  std::map<std::string, std::string> node_labels;
  // DeviceClasses: a YAML/JSON file or a folder of them, read at each allocation (classes can
  // be added without a restart). Empty: no classes, and every claim's class is unknown.
  std::filesystem::path device_classes;
  structured::Features features;
  absl::Duration timeout = absl::Seconds(10);
};

// ReadDeviceClasses: the DeviceClasses in `path` (a YAML/JSON file or a folder of them), read
// now; none for an empty path. InvalidArgument naming the file for one that cannot be read or is
// not a valid DeviceClass (its selectors compiled as the API server compiles a new class's, with
// `features`: structured::NewSelectorCost).
absl::StatusOr<std::vector<kubeapi::DeviceClass>> ReadDeviceClasses(
    const std::filesystem::path& path, const structured::Features& features);

class ClaimAllocator {
 public:
  ClaimAllocator(ClaimAllocatorOptions options, resourceslice::SliceStore& slices)
      : options_(std::move(options)), slices_(slices) {}

  // Allocate gives every claim of `claims.unallocated` its allocation (in `claims.claims` too).
  // A claim the node holds already (one of `held`, the same namespace, name and UID) keeps the
  // allocation it has; the devices of the others in `held`, and of the pod's own claims that
  // came allocated, are taken.
  // FailedPrecondition "cannot allocate all claims: ..." saying, for each request, how many
  // devices were candidates when no allocation exists; InvalidArgument for claims or classes
  // that cannot be allocated anywhere (an unknown class, a selector using a feature
  // whose gate is off).
  // Nothing changes on an error.
  absl::Status Allocate(PodClaims& claims, const std::vector<dra::ResourceClaim>& held) const;

 private:
  const ClaimAllocatorOptions options_;
  resourceslice::SliceStore& slices_;
};

}  // namespace devmgr::node
