// Allocator: structured allocation of DRA devices to ResourceClaims on one node, as upstream's
// k8s.io/dynamic-resource-allocation/structured allocator does it for the scheduler: the claims
// in order, their requests in order, one device at a time from the node's pools in slice order
// (class and request selectors, admin access, taints, shared counters, consumable capacity,
// constraints), depth-first with backtracking, the first full solution winning. The same inputs
// give the same results.
//
// Where upstream's allocator has known faults, this one does not: a matchAttribute over list
// attributes forgets a device that was backtracked (kubernetes#140300), a distinctAttribute
// tracks every device and not one per request (kubernetes#140438), and counters taken by a
// candidate that is then refused (taint, constraint) are given back (kubernetes#140436).
//
// Thread-safety: an Allocator is immutable after Create but for its caches, which are locked;
// Allocate may run on several threads at once. Allocate blocks for the search, at most until
// the options' timeout.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cel/program.h"
#include "kubeapi/resource_claim.h"
#include "kubeapi/resource_slice.h"
#include "structured/capacity.h"
#include "structured/device.h"
#include "structured/explanation.h"
#include "structured/feature_gates.h"
#include "structured/node_selector.h"

namespace devmgr::structured {

// The scheduler's DynamicResourcesArgs.filterTimeout default.
inline constexpr absl::Duration kDefaultAllocationTimeout = absl::Seconds(10);

// What is already allocated on the node: devices held by other claims, shared devices (a
// device that allows multiple allocations, with the share's ID) and their consumed capacity.
// Results with admin access hold nothing.
struct AllocatedState {
  absl::flat_hash_set<DeviceID> devices;
  std::set<std::pair<DeviceID, std::string>> shared;
  absl::flat_hash_map<DeviceID, ConsumedCapacity> consumed_capacity;
};

// AllocatedStateOf: the state the allocations of `claims` leave (claims without one add none).
// A result with a share ID is a share only with consumable capacity on; with it off the device
// is held whole, as the scheduler counts it.
AllocatedState AllocatedStateOf(const std::vector<kubeapi::ResourceClaim>& claims,
                                const Features& features);

struct AllocatorOptions {
  Features features;
  // The search gives up after this long: DeadlineExceeded "filter operation aborted: context
  // deadline exceeded". Zero: never, as the scheduler's filterTimeout of zero disables it.
  absl::Duration timeout = kDefaultAllocationTimeout;
  // When set and true, the search gives up: Cancelled "filter operation aborted: context
  // canceled".
  const std::atomic<bool>* cancelled = nullptr;
  // The ID of a new share of a device (consumable capacity); a random UUID when not set.
  std::function<std::string()> new_share_id;
};

struct AllocatorStats {
  // Upstream's NumAllocateOneInvocations: the steps the last Allocate's search took.
  int64_t allocate_one_calls = 0;
};

class Allocator {
 public:
  // Create reads the slices once for every Allocate. A slice the allocator cannot read makes
  // its pool invalid, with the reason.
  static std::unique_ptr<Allocator> Create(AllocatorOptions options, AllocatedState allocated,
                                           std::vector<kubeapi::DeviceClass> classes,
                                           const std::vector<kubeapi::ResourceSlicePtr>& slices);

  // Allocate finds devices for every claim at once on `node`. The results, one per claim in
  // order; std::nullopt when there is no solution (not an error: another node may have one).
  // Errors, with upstream's texts: a claim that cannot be allocated anywhere ("claim NS/NAME,
  // request REQ: could not retrieve device class ...", "... exceeds the claim limit of 32"),
  // a selector that does not compile or fails on a device ("... CEL runtime error: ..."), a
  // capacity request whose share of a device cannot be computed or is negative (`capacity
  // "bw": capacity request cannot be represented ...`, capacity.h), an All request over a pool
  // being updated, the timeout or cancellation.
  // `explanation`, when given, is filled with why each device was or was not a candidate and
  // what the search ran into (explanation.h).
  absl::StatusOr<std::optional<std::vector<kubeapi::AllocationResult>>> Allocate(
      const Node& node, const std::vector<const kubeapi::ResourceClaim*>& claims,
      Explanation* explanation = nullptr) const;

  AllocatorStats stats() const;

 private:
  friend class Search;
  Allocator(AllocatorOptions options, AllocatedState allocated,
            std::vector<kubeapi::DeviceClass> classes,
            std::vector<std::shared_ptr<const SliceInfo>> slices)
      : options_(std::move(options)),
        allocated_(std::move(allocated)),
        classes_(std::move(classes)),
        slices_(std::move(slices)) {}

  // Compiled selectors, by expression.
  absl::StatusOr<std::shared_ptr<const cel::Program>> Compile(const std::string& expression) const;
  const kubeapi::DeviceClass* FindClass(const std::string& name) const;

  const AllocatorOptions options_;
  const AllocatedState allocated_;
  const std::vector<kubeapi::DeviceClass> classes_;
  const std::vector<std::shared_ptr<const SliceInfo>> slices_;

  mutable absl::Mutex mu_;
  mutable std::map<std::string, absl::StatusOr<std::shared_ptr<const cel::Program>>> programs_
      ABSL_GUARDED_BY(mu_);
  mutable AllocatorStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::structured
