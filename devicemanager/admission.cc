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
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devicemanager/manager_impl.h"

namespace devmgr::devicemanager {
namespace {

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

// The effective per-pod device request, as Kubernetes' PodLimits: the larger of what the app
// containers and sidecars hold together and what each regular init container needs beside
// the sidecars started before it.
std::map<std::string, int64_t> PodDeviceRequest(const Pod& pod) {
  std::map<std::string, int64_t> init_max;
  std::map<std::string, int64_t> sidecars;
  for (const Container& container : pod.init_containers) {
    for (const auto& [resource, count] : container.devices) {
      if (container.type == ContainerType::kSidecar) {
        sidecars[resource] += count;
        init_max[resource] = std::max(init_max[resource], sidecars[resource]);
      } else {
        init_max[resource] = std::max(init_max[resource], count + sidecars[resource]);
      }
    }
  }
  std::map<std::string, int64_t> result = sidecars;
  for (const Container& container : pod.containers) {
    for (const auto& [resource, count] : container.devices) result[resource] += count;
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

absl::Status ManagerImpl::Allocate(const Pod& pod, const Container& container) {
  if (pod.FindContainer(container.name) == nullptr) {
    return Refused(kRefusedNotFound, absl::NotFoundError(absl::StrCat("container ", container.name,
                                                                      " is not in pod ", pod.uid)));
  }
  return AllocateContainer(pod, container);
}

absl::Status ManagerImpl::Refused(absl::string_view reason, absl::Status status) {
  metrics_.AdmissionRefused(reason);
  return status;
}

void ManagerImpl::WaitForPluginLocked(const std::string& resource,
                                      const std::set<std::string>& held) {
  if (options_.admission_wait <= absl::ZeroDuration()) return;
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (stopping_) return true;
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
  DEVMGR_LOG(options_.logger, info, "Waiting for device plugin to come back before admission",
             "resourceName", resource, "timeout", absl::FormatDuration(options_.admission_wait));
  mu_.AwaitWithTimeout(absl::Condition(&ready), options_.admission_wait);
}

absl::StatusOr<std::set<std::string>> ManagerImpl::PreferredAllocationLocked(
    const std::string& resource, const IdSet& available, const std::set<std::string>& picked,
    const std::vector<std::string>& must_include, int64_t size) {
  auto it = endpoints_.find(resource);
  if (it == endpoints_.end()) {
    return absl::NotFoundError(
        absl::StrCat("endpoint not found in cache for a registered resource: ", resource));
  }
  EndpointSharedPtr endpoint = it->second;
  if (!endpoint->plugin_options().get_preferred_allocation_available()) {
    return std::set<std::string>();
  }
  std::vector<std::string> available_list;
  available_list.reserve(available.size() + picked.size());
  std::set_union(available.begin(), available.end(), picked.begin(), picked.end(),
                 std::back_inserter(available_list));
  DEVMGR_LOG(options_.logger, debug, "Asking device plugin for a preferred allocation", "resource",
             resource, "available", available_list.size(), "size", size);
  // Our reservations stay in place while the plugin thinks; other admissions go on.
  mu_.Unlock();
  auto response =
      endpoint->GetPreferredAllocation(available_list, must_include, static_cast<int>(size));
  mu_.Lock();
  if (!response.ok()) {
    return Wrap(response.status(), kPreferredAllocationFailed);
  }
  std::set<std::string> preferred;
  if (response->container_responses_size() > 0) {
    for (const auto& id : response->container_responses(0).deviceids()) preferred.insert(id);
  }
  return preferred;
}

absl::StatusOr<std::optional<ManagerImpl::Reservation>> ManagerImpl::ReserveDevices(
    const Pod& pod, const Container& container, const std::string& resource, int64_t required,
    bool sources_ready) {
  // The host's topology manager is asked before taking the lock: it is the host's code.
  std::optional<NumaMask> affinity;
  if (options_.topology_affinity != nullptr) {
    affinity = options_.topology_affinity->GetAffinity(pod.uid, container.name);
  }
  absl::MutexLock lock(&mu_);
  if (!IsDevicePluginResourceLocked(resource)) return std::nullopt;
  const std::set<std::string> held = HeldLocked(pod.uid, container.name, resource);
  int64_t needed = required;
  if (!held.empty()) {
    needed -= static_cast<int64_t>(held.size());
    // A pod's resources do not change once admitted by the API server: fail loudly.
    if (needed != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("pod \"", pod.uid, "\" container \"", container.name,
                       "\" changed request for resource \"", resource, "\" from ", held.size(),
                       " to ", required));
    }
  }
  // Restart of the host: the container runs with its devices already.
  if (!sources_ready && options_.running_containers.contains({pod.uid, container.name})) {
    return std::nullopt;
  }
  WaitForPluginLocked(resource, held);
  auto table_it = devices_.find(resource);
  if (table_it == devices_.end()) {
    return absl::NotFoundError(absl::StrCat("cannot allocate unregistered device ", resource));
  }
  // Kept: the map's entry can be replaced while mu_ is released below.
  const SharedTable table = table_it->second;
  if (table->healthy_count() == 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("no healthy devices present; cannot allocate unhealthy devices ", resource));
  }
  if (!std::all_of(held.begin(), held.end(),
                   [&](const std::string& id) { return table->IsHealthy(id); })) {
    return absl::FailedPreconditionError(
        absl::StrCat("previously allocated devices are no longer healthy; cannot allocate "
                     "unhealthy devices ",
                     resource));
  }
  if (needed == 0) return std::nullopt;
  if (!in_flight_.emplace(pod.uid, container.name, resource).second) {
    return absl::AbortedError(absl::StrCat("allocation of ", resource, " to pod ", pod.uid,
                                           " container ", container.name,
                                           " is already in progress"));
  }

  Reservation reservation;
  reservation.resource = resource;
  std::set<std::string> picked;
  // Looked up afresh each time: the map's entry can go away while mu_ is released below.
  auto is_reserved = [&](const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = reserved_.find(resource);
    return it != reserved_.end() && it->second.contains(id);
  };
  // Takes devices from `from` (in order), only those also in `within` when given, until
  // enough are picked; true when done. Whether a device is still healthy, reserved or
  // committed to any container is looked up at the time: while mu_ is released for
  // GetPreferredAllocation, other admissions reserve and commit, and devices turn unhealthy.
  // `from` is ordered: a std::set or an IdSet.
  auto take_from = [&](const auto& from, const IdSet* within = nullptr)
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                         auto table_now = devices_.find(resource);
                         if (table_now == devices_.end()) return needed <= 0;
                         for (const auto& id : from) {
                           if (needed <= 0) break;
                           if (within != nullptr && !within->contains(id)) continue;
                           if (!table_now->second->IsHealthy(id) || picked.contains(id) ||
                               is_reserved(id) || pod_devices_.Holds(resource, id)) {
                             continue;
                           }
                           reserved_[resource].insert(id);
                           picked.insert(id);
                           reservation.ids.push_back(id);
                           reservation.new_ids.push_back(id);
                           --needed;
                         }
                         return needed <= 0;
                       };
  auto fail = [&](absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ReleaseLocked(pod, container, reservation);
    return status;
  };

  // Devices of the pod's init containers first: they are free again once those have run.
  if (auto pod_reuse = devices_to_reuse_.find(pod.uid); pod_reuse != devices_to_reuse_.end()) {
    auto reusable = pod_reuse->second.find(resource);
    if (reusable != pod_reuse->second.end()) {
      for (auto it = reusable->second.begin(); it != reusable->second.end() && needed > 0;) {
        reservation.ids.push_back(*it);
        reservation.from_reuse.push_back(*it);
        picked.insert(*it);
        --needed;
        it = reusable->second.erase(it);
      }
    }
  }
  if (needed == 0) return reservation;

  // In use: committed to any container, or reserved by an admission in flight.
  IdSet available = pod_devices_.NotHeld(resource, *table);
  if (auto reserved = reserved_.find(resource); reserved != reserved_.end()) {
    available.EraseAll(reserved->second);
  }
  if (static_cast<int64_t>(available.size()) < needed) {
    return fail(absl::ResourceExhaustedError(
        absl::StrCat("requested number of devices unavailable for ", resource,
                     ". Requested: ", needed, ", Available: ", available.size())));
  }
  const DevicesByAffinity split = FilterByAffinity(available, *table, affinity);
  auto short_error = [&] {
    return absl::InternalError(
        absl::StrCat("unexpectedly allocated less resources than required. Requested: ", required,
                     ", Got: ", required - needed));
  };

  if (needed < static_cast<int64_t>(split.aligned.size())) {
    // Enough aligned devices: the plugin may choose among them.
    auto preferred =
        PreferredAllocationLocked(resource, split.aligned, picked, reservation.ids, required);
    if (!preferred.ok()) return fail(preferred.status());
    if (take_from(*preferred, &split.aligned)) return reservation;
    if (take_from(split.aligned)) return reservation;
    return fail(short_error());
  }
  // Otherwise every aligned device first (the topology manager's alignment is honoured),
  // then the plugin's choice, then unaligned and topology-less devices.
  if (take_from(split.aligned)) return reservation;
  auto preferred =
      PreferredAllocationLocked(resource, available, picked, reservation.ids, required);
  if (!preferred.ok()) return fail(preferred.status());
  if (take_from(*preferred, &available)) return reservation;
  if (take_from(split.unaligned)) return reservation;
  if (take_from(split.no_topology)) return reservation;
  return fail(short_error());
}

void ManagerImpl::ReleaseLocked(const Pod& pod, const Container& container,
                                const Reservation& reservation) {
  in_flight_.erase({pod.uid, container.name, reservation.resource});
  auto reserved = reserved_.find(reservation.resource);
  if (reserved != reserved_.end()) {
    for (const auto& id : reservation.new_ids) reserved->second.erase(id);
    if (reserved->second.empty()) reserved_.erase(reserved);
  }
  if (!reservation.from_reuse.empty()) {
    devices_to_reuse_[pod.uid][reservation.resource].insert(reservation.from_reuse.begin(),
                                                            reservation.from_reuse.end());
  }
}

absl::Status ManagerImpl::AllocateContainer(const Pod& pod, const Container& container) {
  SourcesReadyFn sources_ready_fn;
  bool any_device_resource = false;
  {
    absl::ReleasableMutexLock lock(&mu_);
    if (!started_ || stopping_) {
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
  auto release_all = [&] {
    absl::MutexLock lock(&mu_);
    for (const auto& reservation : done) ReleaseLocked(pod, container, reservation);
  };
  // Resources in name order (container.devices is sorted), one Allocate RPC per resource.
  for (const auto& [resource, count] : container.devices) {
    auto reserved = ReserveDevices(pod, container, resource, count, sources_ready);
    if (!reserved.ok()) {
      release_all();
      return Refused(ReservationRefusal(reserved.status()), reserved.status());
    }
    if (!reserved->has_value()) continue;
    Reservation reservation = **std::move(reserved);
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
                 absl::StrJoin(reservation.ids, ","), "resourceName", resource);
      // No lock held: plugins can be slow. The call has its deadline.
      const auto start = std::chrono::steady_clock::now();
      auto response = reservation.endpoint->Allocate(reservation.ids);
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
      DEVMGR_LOG(options_.logger, err, "Failed to allocate devices", "podUID", pod.uid,
                 "containerName", container.name, "resourceName", resource, "err", status);
      return Refused(refusal, status);
    }
    done.push_back(std::move(reservation));
  }
  if (done.empty()) return absl::OkStatus();

  // Commit every resource of the container at once.
  uint64_t generation = 0;
  std::map<std::string, std::set<std::string>> reuse_before;
  {
    absl::ReleasableMutexLock lock(&mu_);
    if (stopping_) {
      for (const auto& reservation : done) ReleaseLocked(pod, container, reservation);
      lock.Release();
      return Refused(kRefusedNotRunning, absl::UnavailableError("the device manager is stopping"));
    }
    if (auto it = devices_to_reuse_.find(pod.uid); it != devices_to_reuse_.end()) {
      reuse_before = it->second;
    }
    for (auto& reservation : done) {
      auto table = devices_.find(reservation.resource);
      ContainerAllocation allocation;
      allocation.devices = DevicesPerNumaOf(
          reservation.ids, table == devices_.end() ? nullptr : table->second.get());
      allocation.response = std::move(reservation.response);
      pod_devices_.Insert(pod.uid, container.name, reservation.resource, std::move(allocation));
      in_flight_.erase({pod.uid, container.name, reservation.resource});
      auto reserved = reserved_.find(reservation.resource);
      if (reserved != reserved_.end()) {
        for (const auto& id : reservation.new_ids) reserved->second.erase(id);
        if (reserved->second.empty()) reserved_.erase(reserved);
      }
      // A regular init container's devices may be reused by the pod's next containers;
      // sidecars and app containers keep theirs (taken ones already left the set).
      if (container.type == ContainerType::kInit) {
        devices_to_reuse_[pod.uid][reservation.resource].insert(reservation.ids.begin(),
                                                                reservation.ids.end());
      }
    }
    generation = ++commit_generation_;
    ScheduleNotifyLocked();
  }
  absl::Status written = PersistCheckpoint(generation);
  if (!written.ok()) {
    // Admission that cannot persist is refused and rolled back; the next write drops it from
    // the file too if a concurrent write carried it.
    absl::ReleasableMutexLock lock(&mu_);
    for (const auto& reservation : done) {
      pod_devices_.Remove(pod.uid, container.name, reservation.resource);
    }
    if (reuse_before.empty()) {
      devices_to_reuse_.erase(pod.uid);
    } else {
      devices_to_reuse_[pod.uid] = std::move(reuse_before);
    }
    ScheduleCheckpointLocked();
    lock.Release();
    DEVMGR_LOG(options_.logger, err, "Failed to write checkpoint after allocation", "podUID",
               pod.uid, "containerName", container.name, "err", written);
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
    data = CheckpointSnapshotLocked();
    snapshot = commit_generation_;
  }
  absl::Status status = StoreCheckpoint(data);
  if (!status.ok()) return status;
  absl::MutexLock lock(&mu_);
  durable_generation_ = std::max(durable_generation_, snapshot);
  return absl::OkStatus();
}

absl::Status ManagerImpl::AdmitPod(const Pod& pod) {
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
      absl::Status status = AllocateContainer(pod, container);
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
        devices_to_reuse_.erase(pod.uid);
        generation = ++commit_generation_;
        ScheduleNotifyLocked();
      }
      if (absl::Status written = PersistCheckpoint(generation); !written.ok()) {
        DEVMGR_LOG(options_.logger, err, "Failed to write checkpoint after releasing a pod",
                   "podUID", pod.uid, "err", written);
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
  if (sources_ready == nullptr || !sources_ready()) return;
  // Sorted (hosts usually list them nearly so), to be walked beside the held pods.
  std::vector<std::string> active =
      active_pods != nullptr ? active_pods() : std::vector<std::string>();
  std::sort(active.begin(), active.end());
  auto is_active = [&active](const std::string& uid) {
    return std::binary_search(active.begin(), active.end(), uid);
  };
  std::vector<std::string> removed;
  {
    absl::MutexLock lock(&mu_);
    removed = pod_devices_.PodsNotIn(active);
    for (auto it = devices_to_reuse_.begin(); it != devices_to_reuse_.end();) {
      it = is_active(it->first) ? std::next(it) : devices_to_reuse_.erase(it);
    }
    if (removed.empty()) return;
    pod_devices_.Delete(removed);
    ScheduleNotifyLocked();
  }
  DEVMGR_LOG(options_.logger, debug, "Pods to be removed", "podUIDs", absl::StrJoin(removed, ","));
}

absl::Status ManagerImpl::ReleasePod(absl::string_view pod_uid) {
  uint64_t generation = 0;
  {
    absl::MutexLock lock(&mu_);
    devices_to_reuse_.erase(std::string(pod_uid));
    if (!pod_devices_.HasPod(pod_uid)) return absl::OkStatus();
    pod_devices_.Delete({std::string(pod_uid)});
    generation = ++commit_generation_;
    ScheduleNotifyLocked();
  }
  DEVMGR_LOG(options_.logger, info, "Released the devices of a pod", "podUID", pod_uid);
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
  // Hints try every subset of the nodes, 2^n of them, under the lock: past upstream's limit
  // (which a node with that many NUMA nodes never reaches, so only a plugin's made-up IDs can)
  // the resource has no preference instead.
  if (nodes.size() > kMaxNumaNodesForHints) {
    DEVMGR_LOG(options_.logger, warn,
               "Too many NUMA nodes for topology hints, the resource has no preference", "resource",
               resource, "numaNodes", nodes.size(), "limit", kMaxNumaNodesForHints);
    return std::nullopt;
  }
  // Already allocated (e.g. after a restart): the same hints again, or none if the count
  // changed.
  if (!held.empty()) {
    if (static_cast<int64_t>(held.size()) != requested) return std::vector<TopologyHint>();
    return GenerateDeviceTopologyHints(nodes, all, held, {}, requested);
  }
  std::set<std::string> available;
  auto reserved = reserved_.find(resource);
  for (const Device& device : all) {
    if (device.health != Health::kHealthy || pod_devices_.Holds(resource, device.id)) continue;
    if (reserved != reserved_.end() && reserved->second.contains(device.id)) continue;
    available.insert(available.end(), device.id);
  }
  std::set<std::string> both = available;
  both.insert(reusable.begin(), reusable.end());
  if (static_cast<int64_t>(both.size()) < requested) return std::vector<TopologyHint>();
  return GenerateDeviceTopologyHints(nodes, all, available, reusable, requested);
}

TopologyHints ManagerImpl::GetTopologyHints(const Pod& pod, const Container& container) {
  UpdateAllocatedDevices();
  TopologyHints hints;
  absl::MutexLock lock(&mu_);
  for (const auto& [resource, requested] : container.devices) {
    if (!IsDevicePluginResourceLocked(resource)) continue;
    std::set<std::string> reusable;
    auto pod_reuse = devices_to_reuse_.find(pod.uid);
    if (pod_reuse != devices_to_reuse_.end()) {
      auto it = pod_reuse->second.find(resource);
      if (it != pod_reuse->second.end()) reusable = it->second;
    }
    hints[resource] = TopologyHintsLocked(resource, requested,
                                          HeldLocked(pod.uid, container.name, resource), reusable);
  }
  return hints;
}

TopologyHints ManagerImpl::GetPodTopologyHints(const Pod& pod) {
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
