#include "resourceslice/controller.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "resourceslice/slice_names.h"
#include "resourceslice/validation.h"

namespace devmgr::resourceslice {
namespace {

using kubeapi::Device;
using kubeapi::Json;
using kubeapi::ResourceSlice;

constexpr absl::Duration kFailureBaseDelay = absl::Milliseconds(5);
// How soon a pool is looked at again while the store's watch has not read the store yet.
constexpr absl::Duration kWatchSyncWait = absl::Milliseconds(50);
constexpr absl::Duration kFailureMaxDelay = absl::Seconds(1000);

// Upstream's per-item rate limit: 5 ms, doubling with each failure in a row, at most 1000 s.
absl::Duration FailureDelay(int failures) {
  return std::min(kFailureBaseDelay * static_cast<double>(uint64_t{1} << std::min(failures, 40)),
                  kFailureMaxDelay);
}

absl::Status Wrap(absl::string_view prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

bool PoolEqual(const kubeapi::ResourcePool& a, const kubeapi::ResourcePool& b) {
  return a.name == b.name && a.generation == b.generation &&
         a.resource_slice_count == b.resource_slice_count;
}

// How many entries of a list field a device has in its extra fields.
size_t ExtraListSize(const Device& device, const char* key) {
  auto it = device.extra.find(key);
  return it != device.extra.end() && it->is_array() ? it->size() : 0;
}

// The time rounded to a full second, as the API stores it ("Z" for UTC).
std::string RoundToSecond(const std::string& text) {
  absl::Time time;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, text, &time, &error)) return text;
  const absl::Time rounded =
      absl::FromUnixSeconds(absl::ToUnixSeconds(time + absl::Milliseconds(500)));
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%SZ", rounded, absl::UTCTimeZone());
}

// Upstream's copyTaintTimeAdded: each taint of `to` without timeAdded takes the one of the same
// taint (key, value, effect) of the device of the same name in `from`.
std::vector<Device> CopyTaintTimeAdded(const std::vector<Device>& from, std::vector<Device> to) {
  for (Device& device : to) {
    auto old = std::find_if(from.begin(), from.end(),
                            [&](const Device& candidate) { return candidate.name == device.name; });
    if (old == from.end()) continue;
    for (kubeapi::DeviceTaint& taint : device.taints) {
      if (taint.time_added.has_value()) continue;
      auto same = std::find_if(
          old->taints.begin(), old->taints.end(), [&](const kubeapi::DeviceTaint& candidate) {
            return candidate.key == taint.key && candidate.value == taint.value &&
                   candidate.effect == taint.effect;
          });
      if (same != old->taints.end()) taint.time_added = same->time_added;
    }
  }
  return to;
}

// Upstream's copyServerDefaults: taints the server gave a timeAdded get it in `desired` too.
bool CopyServerDefaults(ResourceSlice& desired, const ResourceSlice& actual) {
  bool copied = false;
  for (size_t i = 0; i < desired.spec.devices.size() && i < actual.spec.devices.size(); ++i) {
    std::vector<kubeapi::DeviceTaint>& taints = desired.spec.devices[i].taints;
    const std::vector<kubeapi::DeviceTaint>& stored = actual.spec.devices[i].taints;
    for (size_t t = 0; t < taints.size() && t < stored.size(); ++t) {
      if (!taints[t].time_added.has_value() && stored[t].time_added.has_value()) {
        taints[t].time_added = stored[t].time_added;
        copied = true;
      }
    }
  }
  return copied;
}

}  // namespace

std::vector<std::string> DroppedFields::DisabledFeatures() const {
  std::vector<std::string> disabled;
  const std::vector<Device>& want = desired.spec.devices;
  const std::vector<Device>& got = actual.spec.devices;
  const size_t both = std::min(want.size(), got.size());
  for (size_t i = 0; i < both; ++i) {
    if (want[i].taints.size() > got[i].taints.size()) {
      disabled.push_back("DRADeviceTaints");
      break;
    }
  }
  bool partitionable = (desired.spec.per_device_node_selection.value_or(false) &&
                        !actual.spec.per_device_node_selection.value_or(false)) ||
                       desired.spec.shared_counters.size() > actual.spec.shared_counters.size();
  for (size_t i = 0; i < both && !partitionable; ++i) {
    partitionable = want[i].consumes_counters.size() != got[i].consumes_counters.size();
  }
  if (partitionable) disabled.push_back("DRAPartitionableDevices");
  if (!desired.spec.skip_node_operations.empty() && actual.spec.skip_node_operations.empty()) {
    disabled.push_back("DRAOptionalNodeOperations");
  }
  for (size_t i = 0; i < both; ++i) {
    if (ExtraListSize(want[i], "bindingConditions") != ExtraListSize(got[i], "bindingConditions") ||
        ExtraListSize(want[i], "bindingFailureConditions") !=
            ExtraListSize(got[i], "bindingFailureConditions")) {
      disabled.push_back("DRADeviceBindingConditions");
      break;
    }
  }
  for (size_t i = 0; i < both; ++i) {
    if (want[i].extra.contains("allowMultipleAllocations") &&
        !got[i].extra.contains("allowMultipleAllocations")) {
      disabled.push_back("DRAConsumableCapacity");
      break;
    }
  }
  return disabled;
}

std::string DroppedFields::Message() const {
  std::vector<std::string> disabled = DisabledFeatures();
  if (disabled.empty()) disabled.push_back("unknown");
  return absl::StrCat("pool \"", pool_name, "\", slice #", slice_index,
                      ": some fields were dropped by the apiserver, probably because these "
                      "features are disabled: ",
                      absl::StrJoin(disabled, " "));
}

std::string ControllerError::ToString() const {
  return absl::StrCat(context, ": ", status.message());
}

Controller::Controller(ControllerOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : MonotonicClock()),
      owner_(options_.owner),
      cancellable_store_(options_.store->Cancellable(stop_)),
      retry_bucket_(kRetryQps, kRetryBurst, clock_.Now()) {}

SliceStore& Controller::Store() const {
  return cancellable_store_ != nullptr ? *cancellable_store_ : *options_.store;
}

absl::Status Controller::StopAsked() const {
  absl::MutexLock lock(&mu_);
  if (!stopping_) return absl::OkStatus();
  return absl::CancelledError("the ResourceSlice controller was asked to stop");
}

absl::StatusOr<std::unique_ptr<Controller>> Controller::Start(ControllerOptions options) {
  if (options.store == nullptr)
    return absl::InvalidArgumentError("ControllerOptions.store is null");
  if (options.driver_name.empty()) return absl::InvalidArgumentError("DRA driver name is empty");
  std::unique_ptr<Controller> controller(new Controller(std::move(options)));
  // The watch reports the slices already there, whose pools are then synced, as upstream's
  // informer reports what its list found: a list of our own would only repeat its list.
  std::unique_ptr<SliceWatch> watch = controller->options_.store->Watch(
      controller->Filter(),
      [c = controller.get()](const ResourceSlice* before, const ResourceSlice* after) {
        c->OnStoreChange(before, after);
      });
  const bool watched = watch != nullptr;
  {
    absl::MutexLock lock(&controller->mu_);
    controller->watch_ = std::move(watch);
    // Without a watch the worker lists the store first: a store slow to answer holds up no
    // caller (upstream's StartController waits for its informer to sync).
    if (!watched && controller->options_.run_worker) {
      controller->relist_at_ = controller->clock_.Now();
    }
  }
  if (!watched && !controller->options_.run_worker) controller->ListExisting();
  controller->Update(controller->options_.resources);
  if (controller->options_.run_worker) {
    absl::MutexLock lock(&controller->stop_mu_);
    controller->worker_ = std::thread([c = controller.get()] { c->Run(); });
  }
  return controller;
}

void Controller::ListExisting() {
  // What the store holds already: each pool is looked at after the sync delay, as upstream's
  // informer events schedule it. A store that cannot be read now is tried again by the worker.
  absl::StatusOr<std::vector<ResourceSlice>> existing = Store().List(Filter());
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_.Now();
    if (existing.ok()) {
      relist_at_.reset();
      list_failures_ = 0;
      for (const ResourceSlice& slice : *existing) {
        Queue(slice.spec.pool.name, now + options_.sync_delay);
      }
      return;
    }
    if (stopping_ && absl::IsCancelled(existing.status())) return;  // ended by Stop
    relist_at_ = now + FailureDelay(list_failures_++);
    ++wakeups_;
  }
  Report({"list ResourceSlices", existing.status(), std::nullopt});
}

Controller::~Controller() { Stop(); }

void Controller::Stop() {
  // Held throughout, so that every caller returns after the watch has ended too.
  absl::MutexLock stop_lock(&stop_mu_);
  std::unique_ptr<SliceWatch> watch;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    ++wakeups_;
    watch = std::move(watch_);
  }
  // A sync in flight sends no further write (it asks StopAsked before each), and the store's
  // request it waits on ends now, a retry's pause of up to 30 s (ten times) included.
  stop_.Cancel();
  watch.reset();
  if (worker_.joinable()) worker_.join();
}

void Controller::OnStoreChange(const ResourceSlice* before, const ResourceSlice* after) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  const absl::Time when = clock_.Now() + options_.sync_delay;
  if (before != nullptr) Queue(before->spec.pool.name, when);
  if (after != nullptr) Queue(after->spec.pool.name, when);
}

bool Controller::Synced() const {
  absl::MutexLock lock(&mu_);
  return watch_ == nullptr || watch_->Synced();
}

size_t Controller::MutationsKeptForTest() const {
  absl::MutexLock lock(&mu_);
  return mutations_.size();
}

Stats Controller::GetStats() const {
  return Stats{num_creates_.load(), num_updates_.load(), num_deletes_.load()};
}

SliceFilter Controller::Filter() const {
  SliceFilter filter;
  filter.driver = options_.driver_name;
  filter.pool_name = options_.reconcile_pool_with_name;
  // Node-local slices only for a node's own controller; any other sees the slices that are not
  // node-local, and never another node's (upstream's field selector spec.nodeName=).
  if (options_.reconcile_pool_with_name.empty() && options_.owner.has_value() &&
      options_.owner->IsNode()) {
    filter.node_name = options_.owner->name;
  } else {
    filter.without_node_name = true;
  }
  return filter;
}

void Controller::Report(ControllerError error) const {
  if (options_.error_handler) {
    options_.error_handler(error);
    return;
  }
  DEVMGR_LOG(options_.logger, err, "ResourceSlice controller", "driverName", options_.driver_name,
             "err", error.ToString());
}

void Controller::Update(std::optional<DriverResources> resources) {
  const std::string& only = options_.reconcile_pool_with_name;
  if (resources.has_value() && !only.empty()) {
    const bool has = resources->pools.contains(only);
    if ((has && resources->pools.size() > 1) || (!has && !resources->pools.empty())) {
      Report({"processing update DriverResources",
              absl::InvalidArgumentError(absl::StrCat(
                  "ReconcilePoolWithName=\"", only, "\", but found ", resources->pools.size(),
                  " pools; expected exactly one pool with this name")),
              std::nullopt});
      return;
    }
  }
  DriverResources next = resources.has_value() ? *std::move(resources) : DriverResources{};
  for (auto& [name, pool] : next.pools) {
    // A null selector is none: the API server reads "nodeSelector": null as absent, and a
    // desired null would differ from every slice stored.
    if (pool.node_selector.has_value() && pool.node_selector->is_null()) {
      pool.node_selector.reset();
    }
    // The API keeps whole seconds: without rounding, the desired and the stored taints differ.
    for (Slice& slice : pool.slices) {
      for (Device& device : slice.devices) {
        for (kubeapi::DeviceTaint& taint : device.taints) {
          if (taint.time_added.has_value()) taint.time_added = RoundToSecond(*taint.time_added);
        }
      }
    }
  }
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  for (const auto& [name, pool] : resources_->pools) Queue(name, now);
  resources_ = std::make_shared<const DriverResources>(std::move(next));
  ++resources_version_;
  invalid_pools_.clear();
  for (const auto& [name, pool] : resources_->pools) Queue(name, now);
}

void Controller::Resync() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  for (const auto& [name, pool] : resources_->pools) Queue(name, now);
}

void Controller::Queue(const std::string& pool, absl::Time when) {
  auto [it, added] = queue_.emplace(pool, when);
  if (!added) it->second = std::min(it->second, when);
  ++wakeups_;
}

std::optional<std::string> Controller::Next() {
  const absl::Time now = clock_.Now();
  auto due = queue_.end();
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->second <= now && (due == queue_.end() || it->second < due->second)) due = it;
  }
  if (due == queue_.end()) return std::nullopt;
  std::string pool = due->first;
  queue_.erase(due);
  // A sync that comes sooner (an Update, the watch) takes the place of the look a create asked
  // for: queue that look again, as upstream's syncPool does until the cache's minute is over.
  if (auto recheck = recheck_.find(pool); recheck != recheck_.end()) {
    if (recheck->second > now) {
      queue_.emplace(pool, recheck->second);
    } else {
      recheck_.erase(recheck);
    }
  }
  return pool;
}

bool Controller::RelistDue() const { return relist_at_.has_value() && *relist_at_ <= clock_.Now(); }

int Controller::ProcessReady() {
  int synced = 0;
  while (true) {
    std::optional<std::string> pool;
    bool relist = false;
    {
      absl::MutexLock lock(&mu_);
      relist = RelistDue();
      if (!relist) pool = Next();
    }
    if (relist) {
      ListExisting();
      continue;
    }
    if (!pool.has_value()) return synced;
    Process(*pool);
    ++synced;
  }
}

void Controller::Run() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    if (RelistDue()) {
      mu_.Unlock();
      ListExisting();
      mu_.Lock();
      continue;
    }
    if (std::optional<std::string> pool = Next()) {
      mu_.Unlock();
      Process(*pool);
      mu_.Lock();
      continue;
    }
    absl::Duration wait =
        relist_at_.has_value() ? *relist_at_ - clock_.Now() : absl::InfiniteDuration();
    for (const auto& [name, due] : queue_) wait = std::min(wait, due - clock_.Now());
    const uint64_t seen = wakeups_;
    auto changed = [this, seen]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || wakeups_ != seen; };
    mu_.AwaitWithTimeout(absl::Condition(&changed), wait);
  }
}

void Controller::Process(const std::string& pool) {
  {
    // As upstream waits for its informer: a write made before the watch has read the store
    // could be undone (deleted by someone else) before the watch starts, and then nothing
    // would say so.
    absl::MutexLock lock(&mu_);
    if (watch_ != nullptr && !watch_->Synced()) {
      Queue(pool, clock_.Now() + kWatchSyncWait);
      return;
    }
  }
  const absl::Status synced = SyncPool(pool);
  {
    absl::MutexLock lock(&mu_);
    // Ended by Stop: no failure to report, and nothing left to retry it.
    if (stopping_ && absl::IsCancelled(synced)) return;
    if (synced.ok()) {
      failures_.erase(pool);
      // No watch to say that someone else changed or deleted a slice (the daemon wipes those
      // of a driver it cannot reach): look again after the delay, as an event would ask;
      // not while this pool is invalid, which only an Update changes.
      auto invalid = invalid_pools_.find(pool);
      const bool found_invalid =
          invalid != invalid_pools_.end() && invalid->second == resources_version_;
      if (watch_ == nullptr && options_.sync_delay > absl::ZeroDuration() && !found_invalid &&
          resources_->pools.contains(pool)) {
        Queue(pool, clock_.Now() + options_.sync_delay);
      }
      return;
    }
    Queue(pool, clock_.Now() + RetryDelayLocked(pool));
  }
  Report({"processing ResourceSlice objects", synced, std::nullopt});
}

absl::Duration Controller::RetryDelayLocked(const std::string& pool) {
  return std::max(FailureDelay(failures_[pool]++), retry_bucket_.Reserve(clock_.Now()));
}

absl::Status Controller::RemoveSlices(const std::vector<kubeapi::ResourceSlicePtr>& slices) {
  for (const kubeapi::ResourceSlicePtr& shared : slices) {
    if (absl::Status stop = StopAsked(); !stop.ok()) return stop;
    const ResourceSlice& slice = *shared;
    const absl::Status deleted =
        Store().Delete(slice.metadata.name, slice.metadata.uid, slice.metadata.resource_version);
    if (deleted.ok()) {
      ++num_deletes_;
    } else if (!absl::IsNotFound(deleted)) {
      return Wrap("delete resource slice: ", deleted);
    }
    Mutated(slice.metadata.name, slice.spec.pool.name, nullptr);
  }
  return absl::OkStatus();
}

void Controller::Mutated(const std::string& name, const std::string& pool,
                         kubeapi::ResourceSlicePtr stored) {
  absl::MutexLock lock(&mu_);
  if (watch_ == nullptr) return;  // the store itself is read: nothing to lay over it
  const absl::Time now = clock_.Now();
  // Expired writes go here too: a watch that keeps no copy never has them read (and dropped).
  std::erase_if(mutations_, [now](const auto& entry) { return entry.second.expires <= now; });
  mutations_[name] = Mutation{std::move(stored), pool, now + kMutationCacheTtl};
}

absl::StatusOr<std::vector<kubeapi::ResourceSlicePtr>> Controller::ReadSlices(
    const SliceFilter& filter) {
  std::optional<CachedSlices> cached;
  {
    absl::MutexLock lock(&mu_);
    if (watch_ != nullptr) cached = watch_->Cached(filter);
    if (cached.has_value()) {
      // The API's versions are integers that only grow: a write is newer than what the copy
      // has of its slice while its version is above the slice's there; and the copy has caught
      // up with a write (has it, or a later change that undid it, such as a deletion by someone
      // else) once the copy's own version is not below the write's.
      const auto version = [](const std::string& text) -> std::optional<int64_t> {
        int64_t number = 0;
        if (!absl::SimpleAtoi(text, &number)) return std::nullopt;
        return number;
      };
      const std::optional<int64_t> copy_version = version(cached->resource_version);
      const absl::Time now = clock_.Now();
      std::erase_if(mutations_, [&](const auto& entry) {
        const Mutation& mutation = entry.second;
        if (mutation.expires <= now) return true;
        if (mutation.slice == nullptr || !copy_version.has_value()) return false;
        const std::optional<int64_t> written = version(mutation.slice->metadata.resource_version);
        return written.has_value() && *copy_version >= *written;
      });
      std::vector<kubeapi::ResourceSlicePtr>& slices = cached->slices;
      std::set<std::string> seen;
      for (auto it = slices.begin(); it != slices.end();) {
        seen.insert((*it)->metadata.name);
        auto mutation = mutations_.find((*it)->metadata.name);
        if (mutation == mutations_.end()) {
          ++it;
        } else if (mutation->second.slice == nullptr) {
          it = slices.erase(it);  // deleted here, which the copy has not seen yet
        } else {
          const std::optional<int64_t> written =
              version(mutation->second.slice->metadata.resource_version);
          const std::optional<int64_t> copied = version((*it)->metadata.resource_version);
          const bool newer = written.has_value() && copied.has_value()
                                 ? *written > *copied
                                 : mutation->second.slice->metadata.resource_version !=
                                       (*it)->metadata.resource_version;
          if (newer) {
            *it = mutation->second.slice;
          } else {
            mutations_.erase(mutation);  // the copy has this write
          }
          ++it;
        }
      }
      // Slices created here that the copy does not have yet.
      for (const auto& [name, mutation] : mutations_) {
        if (seen.contains(name) || mutation.slice == nullptr) continue;
        if (!filter.pool_name.empty() && mutation.pool != filter.pool_name) continue;
        slices.push_back(mutation.slice);
      }
      std::sort(slices.begin(), slices.end(),
                [](const auto& a, const auto& b) { return a->metadata.name < b->metadata.name; });
      return std::move(slices);
    }
  }
  absl::StatusOr<std::vector<ResourceSlice>> listed = Store().List(filter);
  if (!listed.ok()) return listed.status();
  std::vector<kubeapi::ResourceSlicePtr> out;
  out.reserve(listed->size());
  for (ResourceSlice& slice : *listed) {
    out.push_back(std::make_shared<const ResourceSlice>(std::move(slice)));
  }
  return out;
}

absl::Status Controller::SyncPool(const std::string& pool_name) {
  SliceFilter filter = Filter();
  filter.pool_name = pool_name;
  absl::StatusOr<std::vector<kubeapi::ResourceSlicePtr>> listed = ReadSlices(filter);
  if (!listed.ok()) return Wrap("retrieve ResourceSlice objects: ", listed.status());
  const std::vector<kubeapi::ResourceSlicePtr>& slices = *listed;

  // A snapshot: an Update meanwhile replaces resources_, it does not change this one.
  std::shared_ptr<const DriverResources> snapshot;
  uint64_t version = 0;
  {
    absl::MutexLock lock(&mu_);
    snapshot = resources_;
    version = resources_version_;
  }
  const DriverResources& resources = *snapshot;
  auto wanted = resources.pools.find(pool_name);
  if (wanted == resources.pools.end()) {
    if (absl::Status removed = RemoveSlices(slices); !removed.ok()) {
      return Wrap("remove slices: ", removed);
    }
    return absl::OkStatus();
  }
  const Pool& pool = wanted->second;
  if (absl::Status valid = ValidatePool(pool_name, pool); !valid.ok()) {
    // Reported, not retried: only a new Update can fix it.
    {
      absl::MutexLock lock(&mu_);
      invalid_pools_[pool_name] = version;
    }
    Report({"pool validation failed", valid, std::nullopt});
    return absl::OkStatus();
  }

  std::optional<std::string> node_name;
  if (owner_.has_value() && owner_->IsNode()) {
    if (options_.reconcile_pool_with_name.empty()) node_name = owner_->name;
    if (owner_->uid.empty()) {
      absl::StatusOr<std::string> uid = Store().NodeUid(owner_->name);
      if (!uid.ok()) {
        return Wrap(absl::StrCat("retrieve node \"", owner_->name, "\": "), uid.status());
      }
      owner_->uid = *std::move(uid);
    }
  }

  int64_t generation = 0;
  for (const kubeapi::ResourceSlicePtr& slice : slices) {
    generation = std::max(generation, slice->spec.pool.generation);
  }
  // Each existing slice either matches a desired slice by its index or is obsolete.
  const int64_t count = static_cast<int64_t>(pool.slices.size());
  const int length = IndexLength(count);
  std::map<int64_t, const ResourceSlice*> current;
  std::vector<kubeapi::ResourceSlicePtr> obsolete;
  for (const kubeapi::ResourceSlicePtr& slice : slices) {
    if (slice->spec.pool.generation < generation) {
      obsolete.push_back(slice);
      continue;
    }
    absl::StatusOr<int64_t> index = DecodeIndex(slice->metadata.name, length);
    if (index.ok() && *index >= 0 && *index < count && !current.contains(*index)) {
      current[*index] = slice.get();
      continue;
    }
    obsolete.push_back(slice);
  }

  kubeapi::ResourcePool desired_pool;
  desired_pool.name = pool_name;
  desired_pool.generation = generation;
  desired_pool.resource_slice_count = count;
  std::set<int64_t> changed;
  for (const auto& [index, slice] : current) {
    const Slice& want = pool.slices[static_cast<size_t>(index)];
    if (!PoolEqual(slice->spec.pool, desired_pool) ||
        !kubeapi::NodeSelectorsEqual(slice->spec.node_selector, pool.node_selector) ||
        slice->spec.all_nodes.value_or(false) != pool.all_nodes ||
        !kubeapi::DevicesDeepEqual(slice->spec.devices, want.devices) ||
        !kubeapi::CounterSetsEqual(slice->spec.shared_counters, want.shared_counters) ||
        slice->spec.per_device_node_selection != want.per_device_node_selection ||
        slice->spec.skip_node_operations != want.skip_node_operations) {
      changed.insert(index);
    }
  }
  const int64_t num_new = count - static_cast<int64_t>(current.size());
  bool bumped = false;
  if (pool.generation > generation) {
    // The driver asked for it (or starts above zero).
    generation = pool.generation;
    bumped = true;
  } else if (num_new == 0 && changed.size() <= 1) {
    // At most one write: consumers never see a mix of generations.
  } else {
    ++generation;
    bumped = true;
  }
  desired_pool.generation = generation;

  // What the store kept differently is followed once the writes end, however they end: one
  // copy of the desired state for the pool instead of one per slice written.
  std::vector<Kept> kept;
  absl::Cleanup follow = [&] { FollowStored(pool_name, version, kept); };

  // Obsolete slices go first: devices the driver no longer has should not stay published even
  // if the new slices cannot be written.
  if (absl::Status removed = RemoveSlices(obsolete); !removed.ok()) {
    return Wrap("remove slices: ", removed);
  }

  const std::optional<bool> all_nodes =
      pool.all_nodes ? std::optional<bool>(true) : std::optional<bool>();
  for (const auto& [index, existing] : current) {
    if (!changed.contains(index) && !bumped) continue;
    const Slice& want = pool.slices[static_cast<size_t>(index)];
    ResourceSlice slice = *existing;
    kubeapi::ResourcePool stored_pool = desired_pool;
    stored_pool.extra = existing->spec.pool.extra;
    slice.spec.pool = std::move(stored_pool);
    slice.spec.node_selector = pool.node_selector;
    slice.spec.all_nodes = all_nodes;
    slice.spec.shared_counters = want.shared_counters;
    slice.spec.per_device_node_selection = want.per_device_node_selection;
    slice.spec.skip_node_operations = want.skip_node_operations;
    slice.spec.devices = CopyTaintTimeAdded(existing->spec.devices, want.devices);
    if (absl::Status stop = StopAsked(); !stop.ok()) return stop;
    absl::StatusOr<ResourceSlice> actual = Store().Update(slice);
    if (!actual.ok()) return Wrap("update resource slice: ", actual.status());
    ++num_updates_;
    auto stored = std::make_shared<const ResourceSlice>(*std::move(actual));
    Mutated(stored->metadata.name, pool_name, stored);
    SliceStored("update ResourceSlice", pool_name, static_cast<int>(index), std::move(slice),
                std::move(stored), kept);
  }

  for (int64_t index = 0; index < count; ++index) {
    if (current.contains(index)) continue;
    const Slice& want = pool.slices[static_cast<size_t>(index)];
    ResourceSlice slice;
    std::string generate_name =
        absl::StrCat(EncodeIndex(index, length), "-", options_.driver_name, "-");
    if (owner_.has_value()) {
      absl::StrAppend(&generate_name, owner_->name, "-");
      kubeapi::OwnerReference reference;
      reference.api_version = owner_->api_version;
      reference.kind = owner_->kind;
      reference.name = owner_->name;
      reference.uid = owner_->uid;
      reference.controller = true;
      slice.metadata.owner_references.push_back(std::move(reference));
    }
    slice.metadata.generate_name = std::move(generate_name);
    slice.spec.driver = options_.driver_name;
    slice.spec.pool = desired_pool;
    if (node_name.has_value() && !node_name->empty()) slice.spec.node_name = node_name;
    slice.spec.node_selector = pool.node_selector;
    slice.spec.all_nodes = all_nodes;
    slice.spec.devices = want.devices;
    slice.spec.shared_counters = want.shared_counters;
    slice.spec.per_device_node_selection = want.per_device_node_selection;
    slice.spec.skip_node_operations = want.skip_node_operations;
    if (absl::Status stop = StopAsked(); !stop.ok()) return stop;
    absl::StatusOr<ResourceSlice> actual = Store().Create(slice);
    if (!actual.ok()) return Wrap("create resource slice: ", actual.status());
    ++num_creates_;
    auto stored = std::make_shared<const ResourceSlice>(*std::move(actual));
    Mutated(stored->metadata.name, pool_name, stored);
    {
      // A created slice the copy has not seen could hide a later delete: look again once the
      // mutation cache has let it go, as upstream does.
      absl::MutexLock lock(&mu_);
      if (watch_ != nullptr) {
        const absl::Time at = clock_.Now() + kMutationCacheTtl;
        recheck_[pool_name] = at;
        Queue(pool_name, at);
      }
    }
    SliceStored("create ResourceSlice", pool_name, static_cast<int>(index), std::move(slice),
                std::move(stored), kept);
  }
  return absl::OkStatus();
}

void Controller::SliceStored(const std::string& context, const std::string& pool_name, int index,
                             ResourceSlice desired, kubeapi::ResourceSlicePtr actual,
                             std::vector<Kept>& kept) const {
  // The desired state follows what the store kept, so that the next sync does not write again:
  // a taint's timeAdded the server set, or fields it dropped.
  const bool defaults = CopyServerDefaults(desired, *actual);
  const bool dropped =
      desired.spec.per_device_node_selection != actual->spec.per_device_node_selection ||
      desired.spec.skip_node_operations != actual->spec.skip_node_operations ||
      !kubeapi::CounterSetsEqual(desired.spec.shared_counters, actual->spec.shared_counters) ||
      !kubeapi::DevicesSemanticEqual(desired.spec.devices, actual->spec.devices);
  if (dropped) {
    DroppedFields report{pool_name, index, std::move(desired), *actual};
    const std::string message = report.Message();
    Report({context, absl::FailedPreconditionError(message), std::move(report)});
  }
  if (defaults || dropped) kept.push_back({index, dropped, std::move(actual)});
}

void Controller::FollowStored(const std::string& pool_name, uint64_t version,
                              const std::vector<Kept>& kept) {
  if (kept.empty()) return;
  absl::MutexLock lock(&mu_);
  if (version != resources_version_ || !resources_->pools.contains(pool_name)) return;
  // Copied on write: syncs in progress keep the snapshot they started from.
  auto next = std::make_shared<DriverResources>(*resources_);
  std::vector<Slice>& slices = next->pools[pool_name].slices;
  for (const Kept& stored : kept) {
    if (static_cast<size_t>(stored.index) >= slices.size()) continue;
    Slice& slice = slices[static_cast<size_t>(stored.index)];
    slice.devices = stored.actual->spec.devices;
    if (stored.dropped) {
      slice.per_device_node_selection = stored.actual->spec.per_device_node_selection;
      slice.shared_counters = stored.actual->spec.shared_counters;
      slice.skip_node_operations = stored.actual->spec.skip_node_operations;
    }
  }
  resources_ = std::move(next);
}

}  // namespace devmgr::resourceslice
