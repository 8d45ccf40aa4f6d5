// Controller: keeps the ResourceSlices of one DRA driver in a SliceStore equal to what the driver
// wants published (upstream's k8s.io/dynamic-resource-allocation/resourceslice.Controller and its
// syncPool, step for step): one ResourceSlice per desired Slice, named with the slice's index
// first; the pool generation bumped when more than one slice changes or slices are added; obsolete
// slices (older generation, a name without a valid index, an index past the end, a second slice
// for one index) deleted with uid and resourceVersion preconditions, then updates, then creates;
// owner references and, for a Node owner, spec.nodeName. A write whose result lacks fields the
// driver set is reported as DroppedFields (the server has the feature off) and the desired state
// follows what the server kept, so the controller does not write it again and again.
//
// The store's watch is its informer: a sync reads the watch's copy of the store (the store
// itself when the watch keeps none, as the in-process store's does), with the controller's own
// writes laid over it until the copy has caught up or a minute has passed (upstream's mutation
// cache and its TTL), and a slice of this driver that anyone adds, changes or deletes has its
// pool synced after sync_delay, as upstream's event handlers queue it.
//
// Pools are synced by one worker, each when Update names it (at once), when the store's watch
// reports one of its slices, those there at the start included (after sync_delay), or again
// after a failure: the longer of the pool's own back-off (5 ms doubling to 1000 s) and the wait
// for a token of a bucket all retries share (10 a second, 100 at once), upstream's workqueue's
// default controller rate limiter. Validation errors are reported once and not retried. Over a
// store with no watch (the daemon's, over gRPC), the controller lists the store at start itself
// (that list is the only one, as the informer's is upstream's), and nothing says when someone
// else changes a slice: each desired pool is synced again every sync_delay instead, which
// writes only what differs.
//
// Thread-safety: every method may be called from any thread at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/token_bucket.h"
#include "kubeclient/http_transport.h"
#include "resourceslice/driver_resources.h"
#include "resourceslice/slice_store.h"

namespace devmgr::resourceslice {

// Upstream's DefaultSyncDelay.
inline constexpr absl::Duration kDefaultSyncDelay = absl::Seconds(30);
// Upstream's MutationCacheTTL: how long the controller's own writes are laid over the watch's
// copy of the store at most.
inline constexpr absl::Duration kMutationCacheTtl = absl::Minutes(1);
// The bucket all retries of failed syncs draw a token from (the overall limit of client-go's
// DefaultTypedControllerRateLimiter, which upstream's queue uses): refilled at kRetryQps tokens a
// second, holding kRetryBurst at most, full at the start.
inline constexpr double kRetryQps = 10;
inline constexpr int kRetryBurst = 100;

// DroppedFields: a slice came back from the store without fields the driver set (upstream's
// DroppedFieldsError).
struct DroppedFields {
  std::string pool_name;
  int slice_index = 0;
  kubeapi::ResourceSlice desired;
  kubeapi::ResourceSlice actual;

  // The feature gates that are probably off: DRADeviceTaints, DRAPartitionableDevices,
  // DRADeviceBindingConditions, DRAConsumableCapacity, DRAOptionalNodeOperations ("unknown" when
  // none fits).
  std::vector<std::string> DisabledFeatures() const;
  // "pool "P", slice #I: some fields were dropped by the apiserver, probably because these
  // features are disabled: F ..."
  std::string Message() const;
};

// ControllerError: what the controller reports to its error handler.
struct ControllerError {
  // What it was doing: "pool validation failed", "create ResourceSlice", "update ResourceSlice",
  // "processing ResourceSlice objects", "processing update DriverResources", "list
  // ResourceSlices".
  std::string context;
  absl::Status status;
  // Set when status is a DroppedFields report.
  std::optional<DroppedFields> dropped_fields;

  // "<context>: <message>", as upstream's handlers print it.
  std::string ToString() const;
};

struct Stats {
  int64_t num_creates = 0;
  int64_t num_updates = 0;
  int64_t num_deletes = 0;

  bool operator==(const Stats&) const = default;
};

struct ControllerOptions {
  // Required: a DNS subdomain.
  std::string driver_name;
  // Required; not owned; must outlive the controller.
  SliceStore* store = nullptr;
  // Owner of the slices; without one nothing deletes them when the driver goes.
  std::optional<Owner> owner;
  // The first desired state; std::nullopt is "no resources".
  std::optional<DriverResources> resources;
  absl::Duration sync_delay = kDefaultSyncDelay;
  // Called on the worker's thread for every problem; the default logs it. It must not stop or
  // destroy the controller (Stop joins that thread): a host that stops on an error hands the
  // stop to a thread of its own.
  std::function<void(const ControllerError&)> error_handler;
  // Non-empty: manage only this pool, and leave spec.nodeName unset even for a Node owner
  // (node-owned slices that stay visible to other nodes through a node selector).
  std::string reconcile_pool_with_name;
  // False: no worker thread; the host calls ProcessReady itself (tests do).
  bool run_worker = true;
  // Time source of the delays; null means MonotonicClock(). Not owned.
  const Clock* clock = nullptr;
  LoggerPtr logger;
};

class Controller {
 public:
  // Start takes the first desired state and starts the worker. The pools that have slices in the
  // store are synced after sync_delay: the store's watch reports those slices, as upstream's
  // informer does from its one list. Over a store with no watch the worker lists them first
  // (a store that cannot be read is reported as "list ResourceSlices" and listed again later,
  // with the pool's back-off); without a worker (run_worker false), Start lists them itself. It
  // does not wait for the store otherwise. InvalidArgument for missing options.
  static absl::StatusOr<std::unique_ptr<Controller>> Start(ControllerOptions options);
  // Stops the worker.
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Update sets the desired state (a copy is kept; std::nullopt is "no resources"); the old and
  // new pools are synced at once. With reconcile_pool_with_name, any other pool is an error
  // (reported, and the update ignored).
  void Update(std::optional<DriverResources> resources) ABSL_LOCKS_EXCLUDED(mu_);

  // Resync queues every desired pool at once (nothing is written when nothing changed).
  void Resync() ABSL_LOCKS_EXCLUDED(mu_);

  // Stop ends the store's watch and the worker; idempotent. A sync in progress sends no write
  // after the stop (a write already sent is not undone), and the store's request it waits on
  // ends at once where the store is Cancellable (the API store: a retry's pause too), as
  // upstream's Stop cancels its context; the pool is not retried and nothing is reported.
  // Callers on several threads at once each return once both have ended.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_, stop_mu_);

  Stats GetStats() const;

  // Synced: the store's watch has read the store; no pool is synced before (upstream waits for
  // its informer likewise).
  bool Synced() const ABSL_LOCKS_EXCLUDED(mu_);

  // ProcessReady syncs every pool whose time has come, on the caller's thread, until none is
  // left; returns how many syncs ran. Only without the worker (run_worker false).
  int ProcessReady() ABSL_LOCKS_EXCLUDED(mu_);

  // The controller's own writes it keeps to lay over the store's copy, for tests.
  size_t MutationsKeptForTest() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit Controller(ControllerOptions options);

  // Queue marks `pool` to be synced at `when` (an earlier time wins).
  void Queue(const std::string& pool, absl::Time when) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Next removes and returns the pool that is due, if any.
  std::optional<std::string> Next() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Process syncs one pool and queues it again after a failure.
  void Process(const std::string& pool) ABSL_LOCKS_EXCLUDED(mu_);
  // RetryDelayLocked: how long a pool whose sync failed waits to be tried again; it counts the
  // failure and takes a token of the retries' bucket.
  absl::Duration RetryDelayLocked(const std::string& pool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // ListExisting reads the store's slices of this controller and queues their pools, or
  // schedules another try. Only over a store with no watch.
  void ListExisting() ABSL_LOCKS_EXCLUDED(mu_);
  bool RelistDue() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OnStoreChange queues the pools of a slice that changed after the sync delay (the store's
  // watch calls it).
  void OnStoreChange(const kubeapi::ResourceSlice* before, const kubeapi::ResourceSlice* after)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Report(ControllerError error) const;
  // The store the controller reads and writes: options_.store's Cancellable view, or the store.
  SliceStore& Store() const;
  // StopAsked: Cancelled once Stop was called; a sync asks before each write, and ends.
  absl::Status StopAsked() const ABSL_LOCKS_EXCLUDED(mu_);

  absl::Status SyncPool(const std::string& pool_name) ABSL_LOCKS_EXCLUDED(mu_);
  // ReadSlices: the slices a sync of `filter`'s pool starts from (see the file comment).
  absl::StatusOr<std::vector<kubeapi::ResourceSlicePtr>> ReadSlices(const SliceFilter& filter)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Mutated remembers what the store answered to a write of slice `name` (null: it is deleted)
  // for the mutation cache.
  void Mutated(const std::string& name, const std::string& pool, kubeapi::ResourceSlicePtr stored)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status RemoveSlices(const std::vector<kubeapi::ResourceSlicePtr>& slices);
  // What the store kept of slice `index` of a pool, where it differs from what was written.
  struct Kept {
    int index = 0;
    bool dropped = false;  // fields the store left out, beside values it set
    kubeapi::ResourceSlicePtr actual;
  };
  // SliceStored checks what the store kept of a slice it wrote (reporting dropped fields) and
  // adds it to `kept` when the desired state should follow it.
  void SliceStored(const std::string& context, const std::string& pool_name, int index,
                   kubeapi::ResourceSlice desired, kubeapi::ResourceSlicePtr actual,
                   std::vector<Kept>& kept) const;
  // FollowStored makes the desired state follow what the store kept of a pool's slices, with one
  // copy of it, so that the next sync does not write them again. `version` is the desired state's
  // the sync started from: a newer one is left alone.
  void FollowStored(const std::string& pool_name, uint64_t version, const std::vector<Kept>& kept)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The filter of the slices this controller manages.
  SliceFilter Filter() const;

  const ControllerOptions options_;
  const Clock& clock_;
  // The owner, with a Node's uid once looked up; only the worker uses it.
  std::optional<Owner> owner_;
  // Set by Stop: ends the store's requests of a sync in flight, a retry's pause included.
  kubeclient::Cancellation stop_;
  // options_.store->Cancellable(stop_); null when the store's calls cannot be cancelled.
  const std::unique_ptr<SliceStore> cancellable_store_;
  std::atomic<int64_t> num_creates_{0};
  std::atomic<int64_t> num_updates_{0};
  std::atomic<int64_t> num_deletes_{0};

  mutable absl::Mutex mu_;
  // The desired state, shared with the syncs that read it; replaced, never changed in place.
  std::shared_ptr<const DriverResources> resources_ ABSL_GUARDED_BY(mu_) =
      std::make_shared<const DriverResources>();
  // Bumped by every Update.
  uint64_t resources_version_ ABSL_GUARDED_BY(mu_) = 0;
  // Pool name -> the version in which a sync found it invalid (and reported it): not looked at
  // again until an Update, which empties it.
  std::map<std::string, uint64_t> invalid_pools_ ABSL_GUARDED_BY(mu_);
  // Pool name -> when it is due.
  std::map<std::string, absl::Time> queue_ ABSL_GUARDED_BY(mu_);
  // Pool name -> when the slice last created for it leaves the mutation cache, until then: each
  // sync of the pool before that time leaves it queued for then (upstream's lastAddByPool).
  std::map<std::string, absl::Time> recheck_ ABSL_GUARDED_BY(mu_);
  // Pool name -> failed syncs in a row.
  std::map<std::string, int> failures_ ABSL_GUARDED_BY(mu_);
  // The bucket every retry takes a token of (client-go's bucket rate limiter reserves one).
  TokenBucket retry_bucket_ ABSL_GUARDED_BY(mu_);
  // When the store's slices are listed again (the first list failed; only over a store with no
  // watch); std::nullopt: listed.
  std::optional<absl::Time> relist_at_ ABSL_GUARDED_BY(mu_);
  int list_failures_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // The store's watch; ended (outside mu_, which its calls take) by Stop.
  std::unique_ptr<SliceWatch> watch_ ABSL_GUARDED_BY(mu_);
  // The mutation cache: a slice written (null: deleted) by name, with its pool and when the
  // entry expires.
  struct Mutation {
    kubeapi::ResourceSlicePtr slice;
    std::string pool;
    absl::Time expires;
  };
  std::map<std::string, Mutation> mutations_ ABSL_GUARDED_BY(mu_);
  uint64_t wakeups_ ABSL_GUARDED_BY(mu_) = 0;
  // Held by Stop throughout (taken before mu_), so that one caller ends the watch and joins the
  // worker and the others wait for it.
  absl::Mutex stop_mu_;
  std::thread worker_ ABSL_GUARDED_BY(stop_mu_);
};

}  // namespace devmgr::resourceslice
