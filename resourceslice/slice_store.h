// SliceStore: where the ResourceSlice controller reads and writes slices, with the API server's
// semantics: create names a slice from metadata.generateName and sets uid and resourceVersion;
// update and delete check preconditions. Two implementations: the Kubernetes API client, and the
// in-process store of a node without a cluster (memory_store.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kubeapi/resource_slice.h"

namespace devmgr::kubeclient {
class Cancellation;
}  // namespace devmgr::kubeclient

namespace devmgr::resourceslice {

// SliceFilter: which slices a List returns (the field selectors spec.driver, spec.nodeName,
// spec.pool.name); empty fields match everything.
struct SliceFilter {
  std::string driver;
  std::string node_name;
  std::string pool_name;
  // Only slices without spec.nodeName (the field selector "spec.nodeName="): those not local to
  // one node. node_name is then ignored.
  bool without_node_name = false;

  bool Matches(const kubeapi::ResourceSlice& slice) const {
    const bool node_matches = without_node_name
                                  ? slice.spec.node_name.value_or("").empty()
                                  : node_name.empty() || slice.spec.node_name == node_name;
    return node_matches && (driver.empty() || slice.spec.driver == driver) &&
           (pool_name.empty() || slice.spec.pool.name == pool_name);
  }
};

// SliceChangeHandler: told of one slice as it was and as it is (see SliceStore::Watch).
using SliceChangeHandler =
    std::function<void(const kubeapi::ResourceSlice* before, const kubeapi::ResourceSlice* after)>;

// The copy a watch keeps of a store: the slices that match a filter, and the store's
// resourceVersion the copy is at (empty when the store has no such version): a write whose
// version is not above it is in the copy, or was undone by a later change it has.
struct CachedSlices {
  std::vector<kubeapi::ResourceSlicePtr> slices;
  std::string resource_version;
};

// SliceWatch: a subscription to a store's changes; once it is destroyed no further call comes.
class SliceWatch {
 public:
  virtual ~SliceWatch() = default;
  // Cached: the watch's copy of the slices that match `filter` (an informer's cache: it may lag
  // behind writes just made), once it has one; std::nullopt when it keeps none (the store is
  // read instead). Thread-safe.
  virtual std::optional<CachedSlices> Cached(const SliceFilter& filter) const = 0;
  // Synced: the watch has read the store once (an informer's HasSynced): changes from then on
  // are reported. A watch that keeps no copy is synced from the start. Thread-safe.
  virtual bool Synced() const = 0;
};

class SliceStore {
 public:
  virtual ~SliceStore() = default;
  // List: the slices that match, in name order.
  virtual absl::StatusOr<std::vector<kubeapi::ResourceSlice>> List(const SliceFilter& filter) = 0;
  // Create stores a new slice (named after metadata.generateName when metadata.name is empty)
  // and returns it as stored. AlreadyExists for a name that is taken.
  virtual absl::StatusOr<kubeapi::ResourceSlice> Create(const kubeapi::ResourceSlice& slice) = 0;
  // Update replaces the slice of that name, if its resourceVersion is the stored one (Aborted,
  // the API's 409 Conflict, otherwise), and returns it as stored. NotFound when there is none.
  virtual absl::StatusOr<kubeapi::ResourceSlice> Update(const kubeapi::ResourceSlice& slice) = 0;
  // Delete removes slice `name` if its uid and resourceVersion are the given ones (Aborted
  // otherwise). NotFound when there is none.
  virtual absl::Status Delete(const std::string& name, const std::string& uid,
                              const std::string& resource_version) = 0;
  // DeleteCollection removes every slice that matches (the kubelet's wipe of a node's slices).
  virtual absl::Status DeleteCollection(const SliceFilter& filter) = 0;
  // NodeUid: metadata.uid of Node `name` (for a Node owner given without one).
  virtual absl::StatusOr<std::string> NodeUid(const std::string& name) = 0;

  // Watch calls `on_change` for each slice that matches `filter` and that anyone creates
  // (before is null), changes, or deletes (after is null), the watcher's own writes included,
  // until the returned SliceWatch is destroyed: the controller's informer. The slices that match
  // when it starts are reported as created too, once the watch has read them (as an informer
  // reports what its first list found), so the watcher need not list the store itself. The
  // calls come on the writer's thread, one of the store's, or (for the slices there at the
  // start) the caller's before Watch returns; `on_change` must not block or call the store.
  // nullptr when the store cannot tell: changes by others are then seen at the next sync.
  virtual std::unique_ptr<SliceWatch> Watch(const SliceFilter& filter,
                                            SliceChangeHandler on_change) = 0;

  // Cancellable: this store, with its calls ended (Cancelled) once `cancel` is set, in a request
  // or in a retry's pause (a 429 or 503 whose Retry-After can hold a write for minutes), as a
  // client-go call ends with its context; a write whose request went out may have been made.
  // The view must not outlive this store or `cancel`. nullptr (the default) when this store's
  // calls end soon on their own (the in-process store): the store itself is used then.
  virtual std::unique_ptr<SliceStore> Cancellable(const kubeclient::Cancellation& /*cancel*/) {
    return nullptr;
  }
};

}  // namespace devmgr::resourceslice
