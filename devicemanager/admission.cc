// Pod admission of ManagerImpl: Allocate (upstream's Allocate, allocateContainerResources and
// devicesToAllocate), AdmitPod, GetDeviceRunContainerOptions with PreStartContainer,
// UpdateAllocatedDevices and the topology hint provider. The rest of ManagerImpl is in
// manager_impl.cc.
//
// Every admission follows STYLE.md's three steps: reserve devices under mu_, call the plugin
// with mu_ released (each call with its deadline), then commit or roll back under mu_. A
// reservation counts as in use for every other admission but is invisible elsewhere until it
// is committed, so two admissions never get the same device and a refused one leaves no trace.
// Upstream differs on purpose in three places: a container with several resources is all or
// nothing (upstream can leave it partly allocated), the checkpoint is made durable before a
// commit is reported (a failed write rolls the container back), and a known resource whose
// plugin is away may be waited for (ManagerOptions::admission_wait). Also, upstream keeps the
// reusable devices of one pod at a time (the kubelet admits pods one by one); here admissions
// of different pods run in parallel, so each pod keeps its own until it is garbage-collected.
// The order of devices taken from a set is sorted (upstream's is Go's map order), and the
// resources of a container are allocated in name order, so admission is deterministic.

#include <algorithm>
#include <chrono>
#include <iterator>
#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devicemanager/manager_impl.h"

namespace devmgr::devicemanager {
namespace {

// TooFewDevices: upstream's refusal of a pick that finds fewer free devices than it needs.
absl::Status TooFewDevices(const std::string& resource, int64_t requested, size_t available) {
  return absl::ResourceExhaustedError(absl::StrCat("requested number of devices unavailable for ",
                                                   resource, ". Requested: ", requested,
                                                   ", Available: ", available));
}

constexpr absl::string_view kPreferredAllocationFailed =
    "device plugin GetPreferredAllocation rpc failed with err: ";

// The plugin's status with upstream's prefix, keeping its code.
absl::Status Wrap(const absl::Status& status, absl::string_view prefix) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

// The refusal reason of an error of ReserveDevices, which gives each of its own causes a code
// of its own; the plugin's GetPreferredAllocation error keeps the plugin's code and is told
// apart by its prefix.
absl::string_view ReservationRefusal(const absl::Status& status) {
  if (absl::StartsWith(status.message(), kPreferredAllocationFailed)) return kRefusedPluginError;
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
      return kRefusedNoPlugin;
    case absl::StatusCode::kResourceExhausted:
      return kRefusedNotEnoughDevices;
    case absl::StatusCode::kFailedPrecondition:
      return kRefusedStaleAllocation;
    case absl::StatusCode::kAborted:
      return kRefusedAborted;
    case absl::StatusCode::kUnavailable:
      return kRefusedNotRunning;
    default:
      return kRefusedInternal;
  }
}

checkpoint::DevicesPerNuma DevicesPerNumaOf(const std::vector<std::string>& ids,
                                            const DeviceTable* all) {
  checkpoint::DevicesPerNuma result;
  std::vector<std::string> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  for (const auto& id : sorted) {
    const Device* device = all != nullptr ? all->Find(id) : nullptr;
    if (device == nullptr || device->numa_nodes.empty()) {
      result[checkpoint::kNoNumaNode].push_back(id);
      continue;
    }
    for (int64_t node : device->numa_nodes) result[node].push_back(id);
  }
  return result;
}

// Two device counts added, held at the int64 limits: a manifest may ask for counts whose sum
// does not fit, which no node has either way.
int64_t AddCounts(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

// The effective per-pod device request, as Kubernetes' PodLimits: the larger of what the app
// containers and sidecars hold together and what each regular init container needs beside
// the sidecars started before it.
std::map<std::string, int64_t> PodDeviceRequest(const Pod& pod) {
  std::map<std::string, int64_t> init_max;
  std::map<std::string, int64_t> sidecars;
  for (const Container& container : pod.init_containers) {
    for (const auto& [resource, count] : container.devices) {
      if (container.type == ContainerType::kSidecar) {
        sidecars[resource] = AddCounts(sidecars[resource], count);
        init_max[resource] = std::max(init_max[resource], sidecars[resource]);
      } else {
        init_max[resource] = std::max(init_max[resource], AddCounts(count, sidecars[resource]));
      }
    }
  }
  std::map<std::string, int64_t> result = sidecars;
  for (const Container& container : pod.containers) {
    for (const auto& [resource, count] : container.devices) {
      result[resource] = AddCounts(result[resource], count);
    }
  }
  for (const auto& [resource, count] : init_max) {
    result[resource] = std::max(result[resource], count);
  }
  return result;
}

}  // namespace

bool ManagerImpl::IsDevicePluginResourceLocked(const std::string& resource) const {
  return devices_.contains(resource) || pod_devices_.HoldsAny(resource);
}

std::set<std::string> ManagerImpl::HeldLocked(absl::string_view pod_uid,
                                              absl::string_view container_name,
                                              absl::string_view resource) const {
  std::set<std::string> held;
  const checkpoint::DevicesPerNuma* devices =
      pod_devices_.FindDevices(pod_uid, container_name, resource);
  if (devices == nullptr) return held;
  for (const auto& [numa, ids] : *devices) held.insert(ids.begin(), ids.end());
  return held;
}

template <typename Ids>
std::vector<std::string> ManagerImpl::ReusableIdsLocked(const Pod& pod, const std::string& resource,
                                                        const Ids& ids) const {
  auto holds = [&](const Container& container,
                   const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const checkpoint::DevicesPerNuma* devices =
        pod_devices_.FindDevices(pod.uid, container.name, resource);
    if (devices == nullptr) return false;
    return std::any_of(devices->begin(), devices->end(), [&](const auto& per_numa) {
      return std::find(per_numa.second.begin(), per_numa.second.end(), id) != per_numa.second.end();
    });
  };
  std::vector<std::string> reusable;
  for (const std::string& id : ids) {
    bool by_init = false;
    bool kept = false;
    for (const Container& init : pod.init_containers) {
      if (!holds(init, id)) continue;
      by_init = by_init || init.type == ContainerType::kInit;
      kept = kept || init.type != ContainerType::kInit;
    }
    for (const Container& app : pod.containers) kept = kept || holds(app, id);
    if (by_init && !kept) reusable.push_back(id);
  }
  return reusable;
}

class ManagerImpl::AdmittingPod {
 public:
  AdmittingPod(ManagerImpl& manager, const std::string& pod_uid)
      : manager_(manager), pod_uid_(pod_uid) {
    absl::MutexLock lock(&manager_.mu_);
    Admitting& admitting = manager_.admitting_[pod_uid_];
    ++admitting.calls;
    releases_at_start_ = admitting.releases;
  }
  ~AdmittingPod() {
    absl::MutexLock lock(&manager_.mu_);
    auto it = manager_.admitting_.find(pod_uid_);
    if (--it->second.calls == 0) manager_.admitting_.erase(it);
  }
  AdmittingPod(const AdmittingPod&) = delete;
  AdmittingPod& operator=(const AdmittingPod&) = delete;

  // How often ReleasePod had released the pod when this admission began.
  uint64_t releases_at_start() const { return releases_at_start_; }

 private:
  ManagerImpl& manager_;
  const std::string pod_uid_;
  uint64_t releases_at_start_ = 0;
};

absl::Status ManagerImpl::Allocate(const Pod& pod, const Container& container) {
  AdmittingPod admitting(*this, pod.uid);
  const Container* in_spec = pod.FindContainer(container.name);
  if (in_spec == nullptr) {
    return Refused(kRefusedNotFound, absl::NotFoundError(absl::StrCat("container ", container.name,
                                                                      " is not in pod ", pod.uid)));
  }
  // What kind of container it is (init, sidecar or app) is the pod's word, as upstream finds
  // the container in the pod's spec: a caller's copy left at the default would keep an init
  // container's devices from ever being reused.
  Container typed = container;
  typed.type = in_spec->type;
  if (SkipsDraResources(pod)) {
    return AllocateContainer(WithoutDraExtendedResources(pod),
                             WithoutDraExtendedResources(pod, typed), admitting);
  }
  return AllocateContainer(pod, typed, admitting);
}

bool ManagerImpl::SkipsDraResources(const Pod& pod) const {
  return options_.dra_extended_resource && !pod.dra_resource_mappings.empty();
}

absl::Status ManagerImpl::Refused(absl::string_view reason, absl::Status status) {
  metrics_.AdmissionRefused(reason);
  return status;
}

void ManagerImpl::WaitForPluginLocked(const std::string& resource,
                                      const std::set<std::string>& held) {
  if (options_.admission_wait <= absl::ZeroDuration()) return;
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (admissions_stopped_) return true;
    auto endpoint = endpoints_.find(resource);
    auto table = devices_.find(resource);
    if (endpoint == endpoints_.end() || endpoint->second->IsStopped() || table == devices_.end() ||
        table->second->healthy_count() == 0) {
      return false;
    }
    return std::all_of(held.begin(), held.end(),
                       [&](const std::string& id) { return table->second->IsHealthy(id); });
  };
  if (ready()) return;
  // Only a resource the manager knows is worth waiting for: one with an endpoint (stopped
  // within its grace period, or restored from the checkpoint) or with devices held.
  if (!endpoints_.contains(resource) && held.empty()) return;
  // Under mu_, which the wait below releases: a line for a rare and slow event.
  DEVMGR_LOG(options_.logger, info, "Waiting for device plugin to come back before admission",
             "resourceName", resource, "timeout", absl::FormatDuration(options_.admission_wait));
  ++plugin_waits_;
  mu_.AwaitWithTimeout(absl::Condition(&ready), options_.admission_wait);
  --plugin_waits_;
}

int ManagerImpl::AdmissionsWaitingForPluginForTest() const {
  absl::MutexLock lock(&mu_);
  return plugin_waits_;
}

absl::StatusOr<std::optional<ManagerImpl::Pick>> ManagerImpl::BeginPickLocked(
    const Pod& pod, const Container& container, const std::string& resource, int64_t required,
    bool sources_ready, const std::optional<NumaMask>& affinity) {
  if (!IsDevicePluginResourceLocked(resource)) return std::nullopt;
  std::set<std::string> held;
  int64_t needed = required;
  // What the container holds already, which must be all it asks for: a pod's resources do not
  // change once admitted by the API server (fail loudly).
  const auto take_held = [&] {
    mu_.AssertHeld();
    held = HeldLocked(pod.uid, container.name, resource);
    needed = required - static_cast<int64_t>(held.size());
    if (held.empty() || needed == 0) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "pod \"", pod.uid, "\" container \"", container.name, "\" changed request for resource \"",
        resource, "\" from ", held.size(), " to ", required));
  };
  if (absl::Status status = take_held(); !status.ok()) return status;
  // Restart of the host: the container runs with its devices already.
  if (!sources_ready && options_.running_containers.contains({pod.uid, container.name})) {
    return std::nullopt;
  }
  WaitForPluginLocked(resource, held);
  if (admissions_stopped_) {
    return absl::UnavailableError("the device manager is stopping");
  }
  // The wait releases mu_: another call for the container may have allocated it meanwhile,
  // which this one must then not allocate again over it.
  if (absl::Status status = take_held(); !status.ok()) return status;
  auto table = devices_.find(resource);
  if (table == devices_.end()) {
    return absl::NotFoundError(absl::StrCat("cannot allocate unregistered device ", resource));
  }
  if (table->second->healthy_count() == 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("no healthy devices present; cannot allocate unhealthy devices ", resource));
  }
  if (!std::all_of(held.begin(), held.end(),
                   [&](const std::string& id) { return table->second->IsHealthy(id); })) {
    return absl::FailedPreconditionError(
        absl::StrCat("previously allocated devices are no longer healthy; cannot allocate "
                     "unhealthy devices ",
                     resource));
  }
  if (needed == 0) return std::nullopt;
  if (!reservations_.Begin(pod.uid, container.name, resource)) {
    return absl::AbortedError(absl::StrCat("allocation of ", resource, " to pod ", pod.uid,
                                           " container ", container.name,
                                           " is already in progress"));
  }

  Pick pick;
  pick.devices.resource = resource;
  pick.required = required;
  pick.needed = needed;
  auto fail = [&](absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ReleaseLocked(pod, container, pick.devices);
    return status;
  };

  // Devices of the pod's init containers first: they are free again once those have run.
  pick.needed -= reservations_.TakeReusable(pod.uid, pick.needed, pick.devices);
  pick.picked.insert(pick.devices.ids.begin(), pick.devices.ids.end());
  if (pick.needed == 0) return pick;

  // In use: committed to any container, or reserved by an admission in flight.
  pick.available = FreeDevicesLocked(resource, *table->second);
  pick.needed_from_free = pick.needed;
  if (static_cast<int64_t>(pick.available.size()) < pick.needed) {
    return fail(TooFewDevices(resource, pick.needed, pick.available.size()));
  }
  pick.split = FilterByAffinity(pick.available, *table->second, affinity);
  // With more aligned devices than needed the plugin chooses among them; otherwise every
  // aligned device is taken first (the topology manager's alignment is honoured) and the
  // plugin chooses among all the free ones.
  pick.choose_aligned = pick.needed < static_cast<int64_t>(pick.split.aligned.size());
  if (!pick.choose_aligned && TakeFreeLocked(pick, pick.split.aligned)) return pick;

  auto endpoint = endpoints_.find(resource);
  if (endpoint == endpoints_.end()) {
    return fail(absl::NotFoundError(
        absl::StrCat("endpoint not found in cache for a registered resource: ", resource)));
  }
  if (endpoint->second->plugin_options().get_preferred_allocation_available()) {
    // upstream's callGetPreferredAllocationIfAvailable: the plugin sees the devices it may
    // choose from together with those already picked, which it must include.
    pick.ask = endpoint->second;
    const IdSet& candidates = pick.choose_aligned ? pick.split.aligned : pick.available;
    pick.ask_available.reserve(candidates.size() + pick.picked.size());
    std::set_union(candidates.begin(), candidates.end(), pick.picked.begin(), pick.picked.end(),
                   std::back_inserter(pick.ask_available));
    pick.ask_must_include = pick.devices.ids;
  }
  return pick;
}

absl::StatusOr<ReservedDevices> ManagerImpl::FinishPickLocked(const Pod& pod,
                                                              const Container& container,
                                                              Pick& pick, const IdSet& preferred) {
  // The plugin's choice first, among the devices it was offered (those taken since by other
  // admissions are skipped), then the rest in upstream's order. Upstream admits one pod at a
  // time, so the aligned devices it offered are still free; here admissions beside this one may
  // have taken them while the plugin chose, and the pod gets unaligned devices, as when fewer
  // were aligned than it needs, rather than a refusal.
  const bool chosen = pick.choose_aligned ? TakeFreeLocked(pick, preferred, &pick.split.aligned) ||
                                                TakeFreeLocked(pick, pick.split.aligned)
                                          : TakeFreeLocked(pick, preferred, &pick.available);
  const bool done = chosen || TakeFreeLocked(pick, pick.split.unaligned) ||
                    TakeFreeLocked(pick, pick.split.no_topology);
  if (done) return std::move(pick.devices);
  // Admissions beside this one took the devices while the plugin chose, or they turned
  // unhealthy, or their plugin was taken over: too few of those the pick began with are left,
  // the refusal of a pick that finds too few at its start. Every one left was taken above.
  ReleaseLocked(pod, container, pick.devices);
  return TooFewDevices(pick.devices.resource, pick.needed_from_free,
                       static_cast<size_t>(pick.needed_from_free - pick.needed));
}

bool ManagerImpl::TakeFreeLocked(Pick& pick, const IdSet& from, const IdSet* within) {
  const std::string& resource = pick.devices.resource;
  // Whether a device is still healthy, reserved or committed is looked up now: while the
  // plugin chose, other admissions reserved and committed, and devices turned unhealthy.
  auto table = devices_.find(resource);
  if (table == devices_.end()) return pick.needed <= 0;
  for (const auto& id : from) {
    if (pick.needed <= 0) break;
    if (within != nullptr && !within->contains(id)) continue;
    if (!table->second->IsHealthy(id) || pick.picked.contains(id) ||
        reservations_.IsReserved(resource, id) || pod_devices_.Holds(resource, id)) {
      continue;
    }
    reservations_.Reserve(id, pick.devices);
    pick.picked.insert(id);
    --pick.needed;
  }
  return pick.needed <= 0;
}

IdSet ManagerImpl::FreeDevicesLocked(const std::string& resource, const DeviceTable& table) const {
  IdSet free = pod_devices_.NotHeld(resource, table);
  reservations_.EraseReserved(resource, free);
  return free;
}

void ManagerImpl::ReleaseLocked(const Pod& pod, const Container& container,
                                const ReservedDevices& devices) {
  reservations_.Release(pod.uid, container.name, devices,
                        ReusableIdsLocked(pod, devices.resource, devices.from_reuse));
}

absl::StatusOr<std::optional<ReservedDevices>> ManagerImpl::ReserveDevices(
    const Pod& pod, const Container& container, const std::string& resource, int64_t required,
    bool sources_ready) {
  // The host's topology manager is asked before taking the lock: it is the host's code.
  std::optional<NumaMask> affinity;
  if (options_.topology_affinity != nullptr) {
    affinity = options_.topology_affinity->GetAffinity(pod.uid, container.name);
  }
  Pick pick;
  {
    absl::MutexLock lock(&mu_);
    auto begun = BeginPickLocked(pod, container, resource, required, sources_ready, affinity);
    if (!begun.ok()) return begun.status();
    if (!begun->has_value()) return std::nullopt;
    pick = **std::move(begun);
    if (pick.needed <= 0) return std::move(pick.devices);
    // Without a plugin to ask, the pick ends in the same critical section.
    if (pick.ask == nullptr) return FinishPickLocked(pod, container, pick, IdSet());
  }
  // mu_ released: the plugin may be slow (the call has its deadline). The reservations made so
  // far stay in place, so other admissions go on around them.
  DEVMGR_LOG(options_.logger, debug, "Asking device plugin for a preferred allocation", "resource",
             resource, "available", pick.ask_available.size(), "size", required);
  auto response = pick.ask->GetPreferredAllocation(pick.ask_available, pick.ask_must_include,
                                                   static_cast<int>(required));
  absl::MutexLock lock(&mu_);
  if (!response.ok()) {
    ReleaseLocked(pod, container, pick.devices);
    return Wrap(response.status(), kPreferredAllocationFailed);
  }
  std::vector<std::string> preferred;
  if (response->container_responses_size() > 0) {
    const auto& ids = response->container_responses(0).deviceids();
    preferred.assign(ids.begin(), ids.end());
  }
  return FinishPickLocked(pod, container, pick, IdSet(std::move(preferred)));
}

absl::Status ManagerImpl::AllocateContainer(const Pod& pod, const Container& container,
                                            const AdmittingPod& admitting) {
  // The API server refuses a negative request; upstream's pick, which counts down to zero,
  // would take every free device for one.
  for (const auto& [resource, count] : container.devices) {
    if (count < 0) {
      return Refused(kRefusedInvalidRequest,
                     absl::InvalidArgumentError(absl::StrCat("container ", container.name,
                                                             " requests ", count, " of ", resource,
                                                             ": a count must not be negative")));
    }
  }
  SourcesReadyFn sources_ready_fn;
  bool any_device_resource = false;
  {
    absl::ReleasableMutexLock lock(&mu_);
    if (!serving_ || admissions_stopped_) {
      lock.Release();
      return Refused(kRefusedNotRunning,
                     absl::FailedPreconditionError("the device manager is not running"));
    }
    sources_ready_fn = sources_ready_;
    for (const auto& [resource, count] : container.devices) {
      any_device_resource = any_device_resource || IsDevicePluginResourceLocked(resource);
    }
  }
  if (!any_device_resource) return absl::OkStatus();
  // Garbage-collect the devices of pods that are gone before picking (upstream does it before
  // the first device resource).
  UpdateAllocatedDevices();
  const bool sources_ready = sources_ready_fn == nullptr || sources_ready_fn();

  std::vector<Reservation> done;
  // Resources the container already holds, or that need nothing allocated now.
  std::vector<std::string> kept;
  auto release_all = [&] {
    absl::MutexLock lock(&mu_);
    for (const auto& reservation : done) {
      ReleaseLocked(pod, container, reservation.devices);
    }
  };
  // Resources in name order (container.devices is sorted), one Allocate RPC per resource.
  for (const auto& [resource, count] : container.devices) {
    auto reserved = ReserveDevices(pod, container, resource, count, sources_ready);
    if (!reserved.ok()) {
      release_all();
      return Refused(ReservationRefusal(reserved.status()), reserved.status());
    }
    if (!reserved->has_value()) {
      kept.push_back(resource);
      continue;
    }
    Reservation reservation;
    reservation.devices = **std::move(reserved);
    absl::Status status;
    absl::string_view refusal = kRefusedPluginError;
    {
      absl::MutexLock lock(&mu_);
      auto it = endpoints_.find(resource);
      if (it == endpoints_.end()) {
        status = absl::NotFoundError(absl::StrCat("unknown Device Plugin ", resource));
        refusal = kRefusedNoPlugin;
      } else {
        reservation.endpoint = it->second;
      }
    }
    if (status.ok()) {
      DEVMGR_LOG(options_.logger, debug, "Making allocation request for device plugin", "devices",
                 absl::StrJoin(reservation.devices.ids, ","), "resourceName", resource);
      // No lock held: plugins can be slow. The call has its deadline.
      const auto start = std::chrono::steady_clock::now();
      auto response = reservation.endpoint->Allocate(reservation.devices.ids);
      metrics_.AllocationDone(resource, absl::FromChrono(std::chrono::steady_clock::now() - start));
      if (!response.ok()) {
        status = response.status();
      } else if (response->container_responses_size() == 0) {
        status = absl::InternalError(absl::StrCat("no containers return in allocation response ",
                                                  response->ShortDebugString()));
      } else {
        reservation.response = response->container_responses(0);
      }
    }
    if (!status.ok()) {
      done.push_back(std::move(reservation));
      release_all();
      return Refused(refusal, status);
    }
    done.push_back(std::move(reservation));
  }
  const bool reusable_by_pod = container.type == ContainerType::kInit;
  if (!kept.empty()) {
    absl::MutexLock lock(&mu_);
    for (const std::string& resource : kept) {
      const std::set<std::string> held = HeldLocked(pod.uid, container.name, resource);
      if (reusable_by_pod) {
        reservations_.MakeReusable(pod.uid, resource, ReusableIdsLocked(pod, resource, held));
      } else {
        reservations_.Unreusable(pod.uid, resource, held);
      }
    }
  }
  if (done.empty()) return absl::OkStatus();

  // Commit every resource of the container at once.
  uint64_t generation = 0;
  {
    absl::ReleasableMutexLock lock(&mu_);
    // Released since this admission began.
    const bool released = admitting_.at(pod.uid).releases != admitting.releases_at_start();
    if (stopping_ || released) {
      for (const auto& reservation : done) {
        ReleaseLocked(pod, container, reservation.devices);
      }
      lock.Release();
      if (released) {
        return Refused(kRefusedAborted,
                       absl::AbortedError(
                           absl::StrCat("pod ", pod.uid, " was released while it was admitted")));
      }
      return Refused(kRefusedNotRunning, absl::UnavailableError("the device manager is stopping"));
    }
    for (auto& reservation : done) {
      const std::string& resource = reservation.devices.resource;
      auto table = devices_.find(resource);
      ContainerAllocation allocation;
      allocation.devices = DevicesPerNumaOf(
          reservation.devices.ids, table == devices_.end() ? nullptr : table->second.get());
      allocation.response = std::move(reservation.response);
      pod_devices_.Insert(pod.uid, container.name, resource, std::move(allocation));
      // A regular init container's devices may be reused by the pod's next containers;
      // sidecars and app containers keep theirs.
      reservations_.Commit(pod.uid, container.name, reservation.devices, reusable_by_pod);
    }
    generation = ++commit_generation_;
    ScheduleNotifyLocked();
  }
  if (options_.host_syncs_admissions) return absl::OkStatus();
  absl::Status written = PersistCheckpoint(generation);
  if (!written.ok()) {
    // Admission that cannot persist is refused and rolled back; the next write drops it from
    // the file too if a concurrent write carried it.
    absl::ReleasableMutexLock lock(&mu_);
    for (const auto& reservation : done) {
      const std::string& resource = reservation.devices.resource;
      pod_devices_.Remove(pod.uid, container.name, resource);
      // The devices it had newly taken leave reuse; those it took from reuse go back, if the
      // pod may still reuse them.
      if (reusable_by_pod) reservations_.Unreusable(pod.uid, resource, reservation.devices.new_ids);
      reservations_.MakeReusable(pod.uid, resource,
                                 ReusableIdsLocked(pod, resource, reservation.devices.from_reuse));
    }
    freed_generation_ = ++commit_generation_;
    ScheduleCheckpointLocked();
    lock.Release();
    return Refused(kRefusedCheckpointWrite, written);
  }
  return absl::OkStatus();
}

absl::Status ManagerImpl::PersistCheckpoint(uint64_t generation) {
  absl::MutexLock write_lock(&write_mu_);
  CheckpointSnapshot data;
  uint64_t snapshot = 0;
  {
    absl::MutexLock lock(&mu_);
    if (durable_generation_ >= generation) return absl::OkStatus();  // a later write covered it
    if (stopped_) return absl::FailedPreconditionError("the device manager is stopped");
    data = CheckpointSnapshotLocked();
    snapshot = commit_generation_;
  }
  absl::Status status = StoreCheckpoint(data);
  if (!status.ok()) return status;
  absl::MutexLock lock(&mu_);
  durable_generation_ = std::max(durable_generation_, snapshot);
  return absl::OkStatus();
}

absl::Status ManagerImpl::SyncCheckpoint() {
  uint64_t generation = 0;
  {
    absl::MutexLock lock(&mu_);
    if (!serving_ || stopped_) {
      return absl::FailedPreconditionError("the device manager is not running");
    }
    generation = ++commit_generation_;
  }
  return PersistCheckpoint(generation);
}

absl::Status ManagerImpl::AdmitPod(const Pod& pod) {
  if (SkipsDraResources(pod)) return AdmitPod(WithoutDraExtendedResources(pod));
  AdmittingPod admitting(*this, pod.uid);
  // What the pod held before: only what this call adds is released on failure.
  std::set<std::tuple<std::string, std::string>> held_before;
  {
    absl::MutexLock lock(&mu_);
    for (const auto* list : {&pod.init_containers, &pod.containers}) {
      for (const Container& container : *list) {
        for (const auto& [resource, count] : container.devices) {
          if (pod_devices_.FindDevices(pod.uid, container.name, resource) != nullptr) {
            held_before.emplace(container.name, resource);
          }
        }
      }
    }
  }
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const Container& container : *list) {
      absl::Status status = AllocateContainer(pod, container, admitting);
      if (status.ok()) continue;
      uint64_t generation = 0;
      {
        absl::MutexLock lock(&mu_);
        for (const auto* all : {&pod.init_containers, &pod.containers}) {
          for (const Container& other : *all) {
            for (const auto& [resource, count] : other.devices) {
              if (!held_before.contains({other.name, resource})) {
                pod_devices_.Remove(pod.uid, other.name, resource);
              }
            }
          }
        }
        reservations_.ForgetPod(pod.uid);
        generation = freed_generation_ = ++commit_generation_;
        ScheduleNotifyLocked();
      }
      if (absl::Status written = PersistCheckpoint(generation); !written.ok()) {
        DEVMGR_LOG(options_.logger, err, "Failed to write checkpoint after releasing a pod",
                   "podUID", pod.uid, "err", written);
        // Tried again later, so that the file does not keep the refused pod's devices until
        // some other change is written.
        absl::MutexLock lock(&mu_);
        ScheduleCheckpointLocked();
      }
      return status;
    }
  }
  return absl::OkStatus();
}

absl::Status ManagerImpl::CallPreStartContainerIfNeeded(const Pod& pod, const Container& container,
                                                        const std::string& resource) {
  EndpointSharedPtr endpoint;
  std::set<std::string> held;
  {
    absl::MutexLock lock(&mu_);
    auto it = endpoints_.find(resource);
    if (it == endpoints_.end()) {
      return absl::NotFoundError(
          absl::StrCat("endpoint not found in cache for a registered resource: ", resource));
    }
    endpoint = it->second;
    if (!endpoint->plugin_options().pre_start_required()) return absl::OkStatus();
    held = HeldLocked(pod.uid, container.name, resource);
    if (held.empty()) {
      return absl::NotFoundError(absl::StrCat("no devices found allocated in local cache for pod ",
                                              pod.uid, ", container ", container.name,
                                              ", resource ", resource));
    }
  }
  // No lock held; the call has the 30-second PreStartContainer deadline.
  auto response = endpoint->PreStartContainer(std::vector<std::string>(held.begin(), held.end()));
  if (!response.ok()) {
    return Wrap(response.status(), "device plugin PreStartContainer rpc failed with err: ");
  }
  return absl::OkStatus();
}

absl::StatusOr<RunContainerOptions> ManagerImpl::GetDeviceRunContainerOptions(
    const Pod& pod, const Container& container) {
  ActivePodsFn active_pods;
  {
    absl::MutexLock lock(&mu_);
    active_pods = active_pods_;
  }
  bool needs_reallocate = false;
  for (const auto& [resource, count] : container.devices) {
    {
      absl::MutexLock lock(&mu_);
      if (count == 0 || !IsDevicePluginResourceLocked(resource)) continue;
    }
    if (absl::Status status = CallPreStartContainerIfNeeded(pod, container, resource);
        !status.ok()) {
      return status;
    }
    const std::vector<std::string> active =
        active_pods != nullptr ? active_pods() : std::vector<std::string>();
    if (std::find(active.begin(), active.end(), pod.uid) == active.end()) continue;
    absl::MutexLock lock(&mu_);
    // Cached devices missing: most likely a race at node restart; allocate again.
    if (pod_devices_.FindDevices(pod.uid, container.name, resource) == nullptr) {
      needs_reallocate = true;
    }
  }
  if (needs_reallocate) {
    DEVMGR_LOG(options_.logger, info, "Needs to re-allocate device plugin resources for pod",
               "podUID", pod.uid, "containerName", container.name);
    if (absl::Status status = Allocate(pod, container); !status.ok()) return status;
  }
  std::vector<v1beta1::ContainerAllocateResponse> responses;
  std::vector<std::pair<std::string, const v1beta1::ContainerAllocateResponse*>> merged;
  {
    absl::MutexLock lock(&mu_);
    ResourceDevices held = pod_devices_.ContainerDevices(pod.uid, container.name);
    responses.reserve(held.size());
    for (const auto& [resource, devices] : held) {
      std::optional<v1beta1::ContainerAllocateResponse> response =
          pod_devices_.Response(pod.uid, container.name, resource);
      if (!response.has_value()) continue;
      responses.push_back(*std::move(response));
      merged.emplace_back(resource, &responses.back());
    }
  }
  return MergeRunContainerOptions(merged, options_.logger);
}

void ManagerImpl::UpdateAllocatedDevices() {
  ActivePodsFn active_pods;
  SourcesReadyFn sources_ready;
  {
    absl::MutexLock lock(&mu_);
    active_pods = active_pods_;
    sources_ready = sources_ready_;
  }
  // Without the host's list of pods, no pod is gone; until its sources are ready, the list may
  // lack pods that are not.
  if (active_pods == nullptr || (sources_ready != nullptr && !sources_ready())) return;
  // Both revisions are read before the active pods: a pod that leaves, or an allocation made,
  // after this point changes one of them, and the next call passes again.
  std::optional<std::pair<uint64_t, uint64_t>> start;
  if (options_.active_pods_revision != nullptr) {
    const uint64_t pods = options_.active_pods_revision();
    absl::MutexLock lock(&mu_);
    start.emplace(pods, pod_devices_.revision());
    if (passed_at_ == start) return;
  }
  // Sorted, to be walked beside the held pods. Hosts often list them in order already (the
  // daemon's pod registry does): checking that is one pass, sorting again is not.
  std::vector<std::string> active = active_pods();
  if (!std::is_sorted(active.begin(), active.end())) std::sort(active.begin(), active.end());
  std::vector<std::string> removed;
  {
    absl::MutexLock lock(&mu_);
    passed_at_ = start;
    removed = pod_devices_.PodsNotIn(active);
    reservations_.ForgetPodsNotIn(active);
    if (removed.empty()) return;
    pod_devices_.Delete(removed);
    freed_generation_ = ++commit_generation_;
    ScheduleNotifyLocked();
  }
  DEVMGR_LOG(options_.logger, debug, "Pods to be removed", "podUIDs", absl::StrJoin(removed, ","));
}

absl::Status ManagerImpl::ReleasePod(absl::string_view pod_uid) {
  uint64_t generation = 0;
  bool held = false;
  {
    absl::MutexLock lock(&mu_);
    // Nothing changes once Stop has taken the state of its last checkpoint write.
    if (stopped_) return absl::FailedPreconditionError("the device manager is not running");
    if (auto admitting = admitting_.find(pod_uid); admitting != admitting_.end()) {
      ++admitting->second.releases;
    }
    reservations_.ForgetPod(pod_uid);
    held = pod_devices_.HasPod(pod_uid);
    if (held) {
      pod_devices_.Delete({std::string(pod_uid)});
      freed_generation_ = ++commit_generation_;
      ScheduleNotifyLocked();
    }
    // Holding nothing, its devices (if it had any) went with an earlier freeing that may not
    // be on disk yet (a pass of UpdateAllocatedDevices once the host stopped listing the pod,
    // or a release whose write failed): the call returns once that one is.
    generation = freed_generation_;
  }
  if (held) DEVMGR_LOG(options_.logger, info, "Released the devices of a pod", "podUID", pod_uid);
  return PersistCheckpoint(generation);
}

std::optional<std::vector<TopologyHint>> ManagerImpl::TopologyHintsLocked(
    const std::string& resource, int64_t requested, const std::set<std::string>& held,
    const std::set<std::string>& reusable) const {
  static const DeviceTable kNoDevices;
  auto table = devices_.find(resource);
  const DeviceTable& all = table == devices_.end() ? kNoDevices : *table->second;
  // Only devices that report topology have a preference.
  if (!HasTopologyAlignment(all)) return std::nullopt;
  std::vector<int> nodes = options_.numa_nodes;
  if (nodes.empty()) {
    std::set<int> seen;
    for (const Device& device : all) {
      for (int64_t node : device.numa_nodes) {
        if (node >= 0 && node < NumaMask::kMaxNode) seen.insert(static_cast<int>(node));
      }
    }
    nodes.assign(seen.begin(), seen.end());
  }
  // Hints try every subset of the nodes, 2^n of them, under the lock: past the limit the
  // resource has no preference. A host that lists more nodes raises it for its own list, as a
  // kubelet's max-allowable-numa-nodes does; the nodes the devices report keep upstream's
  // default, which only a plugin's made-up IDs pass.
  const size_t limit =
      options_.numa_nodes.empty() ? kMaxNumaNodesForHints : options_.max_allowable_numa_nodes;
  if (nodes.size() > limit) {
    DEVMGR_LOG(options_.logger, warn,
               "Too many NUMA nodes for topology hints, the resource has no preference", "resource",
               resource, "numaNodes", nodes.size(), "limit", limit);
    return std::nullopt;
  }
  // Already allocated (e.g. after a restart): the same hints again, or none if the count
  // changed.
  if (!held.empty()) {
    if (static_cast<int64_t>(held.size()) != requested) return std::vector<TopologyHint>();
    return GenerateDeviceTopologyHints(nodes, all, held, {}, requested);
  }
  const IdSet free = FreeDevicesLocked(resource, all);
  const std::set<std::string> available(free.begin(), free.end());
  std::set<std::string> both = available;
  both.insert(reusable.begin(), reusable.end());
  if (static_cast<int64_t>(both.size()) < requested) return std::vector<TopologyHint>();
  return GenerateDeviceTopologyHints(nodes, all, available, reusable, requested);
}

TopologyHints ManagerImpl::GetTopologyHints(const Pod& pod, const Container& container) {
  if (SkipsDraResources(pod)) {
    return GetTopologyHints(WithoutDraExtendedResources(pod),
                            WithoutDraExtendedResources(pod, container));
  }
  UpdateAllocatedDevices();
  TopologyHints hints;
  absl::MutexLock lock(&mu_);
  for (const auto& [resource, requested] : container.devices) {
    if (!IsDevicePluginResourceLocked(resource)) continue;
    hints[resource] =
        TopologyHintsLocked(resource, requested, HeldLocked(pod.uid, container.name, resource),
                            reservations_.Reusable(pod.uid, resource));
  }
  return hints;
}

TopologyHints ManagerImpl::GetPodTopologyHints(const Pod& pod) {
  if (SkipsDraResources(pod)) return GetPodTopologyHints(WithoutDraExtendedResources(pod));
  UpdateAllocatedDevices();
  TopologyHints hints;
  absl::MutexLock lock(&mu_);
  for (const auto& [resource, requested] : PodDeviceRequest(pod)) {
    if (!IsDevicePluginResourceLocked(resource)) continue;
    std::set<std::string> held;
    for (const auto* list : {&pod.init_containers, &pod.containers}) {
      for (const Container& container : *list) {
        std::set<std::string> ids = HeldLocked(pod.uid, container.name, resource);
        held.insert(ids.begin(), ids.end());
      }
    }
    hints[resource] = TopologyHintsLocked(resource, requested, held, {});
  }
  return hints;
}

}  // namespace devmgr::devicemanager
