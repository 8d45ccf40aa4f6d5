// MemoryStore: ResourceSlices kept in memory with the API server's rules, for a node without a
// cluster (`devmgr serve` owns one for its local drivers; the allocator reads it) and for tests.
// Each slice has its own resourceVersion ("1" when created, one more per update); created slices
// are named metadata.generateName plus a counter and get a uid.
//
// Thread-safety: every method may be called from any thread at once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "resourceslice/slice_store.h"

namespace devmgr::resourceslice {

class MemoryStore final : public SliceStore {
 public:
  // Runs on every slice written (create and update), before it is stored, as an API server's
  // defaulting does: it may set fields (a taint's timeAdded) or drop those of disabled features.
  using WriteHook = std::function<void(kubeapi::ResourceSlice&)>;

  explicit MemoryStore(WriteHook on_write = nullptr) : on_write_(std::move(on_write)) {}

  absl::StatusOr<std::vector<kubeapi::ResourceSlice>> List(const SliceFilter& filter) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<kubeapi::ResourceSlice> Create(const kubeapi::ResourceSlice& slice) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<kubeapi::ResourceSlice> Update(const kubeapi::ResourceSlice& slice) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Delete(const std::string& name, const std::string& uid,
                      const std::string& resource_version) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status DeleteCollection(const SliceFilter& filter) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::string> NodeUid(const std::string& name) override ABSL_LOCKS_EXCLUDED(mu_);
  // The slices there now are reported before Watch returns, on the caller's thread; changes on
  // the writer's thread, after the write (a write made while Watch runs may be reported twice).
  std::unique_ptr<SliceWatch> Watch(const SliceFilter& filter,
                                    SliceChangeHandler on_change) override
      ABSL_LOCKS_EXCLUDED(watchers_mu_, mu_);

  // Put stores `slice` as it is (no hook, no versions): what another writer left behind.
  void Put(const kubeapi::ResourceSlice& slice) ABSL_LOCKS_EXCLUDED(mu_);
  // SetNode makes Node `name` known with `uid`.
  void SetNode(const std::string& name, const std::string& uid) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class Subscription;
  struct Watcher {
    SliceFilter filter;
    SliceChangeHandler on_change;
  };
  // Notify tells the watchers of the changed slices, each as it was and as it is (null: none).
  // Called without mu_.
  using Change = std::pair<const kubeapi::ResourceSlice*, const kubeapi::ResourceSlice*>;
  void Notify(const std::vector<Change>& changed) ABSL_LOCKS_EXCLUDED(watchers_mu_);

  const WriteHook on_write_;
  // Held while watchers are told, so that a Subscription's end waits for a call in progress.
  // Taken before mu_ where both are held.
  absl::Mutex watchers_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::map<int64_t, Watcher> watchers_ ABSL_GUARDED_BY(watchers_mu_);
  int64_t next_watcher_ ABSL_GUARDED_BY(watchers_mu_) = 0;
  absl::Mutex mu_;
  std::map<std::string, kubeapi::ResourceSlice> slices_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> nodes_ ABSL_GUARDED_BY(mu_);
  int64_t created_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace devmgr::resourceslice
