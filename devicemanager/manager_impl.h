// ManagerImpl: the production Manager (see manager.h for the contract of each method). This
// header is for the factory and for tests that need the implementation's extra hooks.
//
// Concurrency (STYLE.md): all device state is behind `mu_`, which is never held across an
// RPC, file I/O or a call into the host, and never released inside a function called holding
// it (only WaitForPluginLocked's condition wait gives it up for a while). Log lines are
// written after mu_ is released, except two rare ones written under it: an admission about
// to wait for its plugin, and a resource with too many NUMA nodes for topology hints.
// Endpoint getters and stop-time methods may be called under `mu_` (lock order: mu_, then the
// endpoint's). Endpoints reach the state through EndpointCallbacks and the registration
// server through RegistrationCallbacks, from their own threads, and only update memory; dials
// run on connect threads; checkpoint writes and change notifications run on the loop thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/event_loop.h"
#include "common/operation_threads.h"
#include "common/stop_once.h"
#include "devicemanager/callbacks.h"
#include "devicemanager/checkpoint_store.h"
#include "devicemanager/device_table.h"
#include "devicemanager/endpoint.h"
#include "devicemanager/id_set.h"
#include "devicemanager/manager.h"
#include "devicemanager/pod_devices.h"
#include "devicemanager/registration_server.h"
#include "devicemanager/reservations.h"
#include "devicemanager/resource_updates.h"
#include "devicemanager/topology_hints.h"

namespace devmgr::devicemanager {

// Name of the registration socket inside the plugin folder.
inline constexpr absl::string_view kKubeletSocketName = "kubelet.sock";
// The empty file AnnouncePluginWatcher creates beside it.
inline constexpr absl::string_view kDeprecationFileName = "DEPRECATION";

class ManagerImpl final : public Manager, private EndpointCallbacks, private RegistrationCallbacks {
 public:
  explicit ManagerImpl(ManagerOptions options);
  // Stops (see Stop) if still running.
  ~ManagerImpl() override;

  absl::Status Start(ActivePodsFn active_pods, SourcesReadyFn sources_ready) override;
  void Stop() override;
  void StopRegistrations() override;
  void StopAdmissions() override;
  CapacityResult GetCapacity() override;
  ResourceDevices GetAllocatableDevices() const override;
  DeviceMap GetAllocatableDevices(absl::string_view resource_name) const override;
  std::map<std::string, uint64_t> AllocatableRevisions() const override;
  ResourceDevices GetDevices(absl::string_view pod_uid,
                             absl::string_view container_name) const override;
  uint64_t AllocationsRevision() const override;
  uint64_t PodAllocationsRevision(absl::string_view pod_uid) const override;
  std::optional<std::vector<std::string>> PodsChangedSince(uint64_t revision) const override;
  std::vector<checkpoint::PodDevicesEntry> Allocations() const override;
  bool RestoredWholeCheckpoint() const override;
  std::vector<ResourceSummary> GetResourceSummaries() const override;
  std::map<std::string, int64_t> UpdatePluginResources(
      absl::string_view pod_uid, std::map<std::string, int64_t> allocatable) const override;
  bool ShouldResetExtendedResourceCapacity() const override;
  int Subscribe(ChangeCallback callback) override;
  void Unsubscribe(int id) override;
  absl::Status ValidatePlugin(absl::string_view resource_name, absl::string_view endpoint,
                              const std::vector<std::string>& versions) override;
  absl::Status RegisterPlugin(absl::string_view resource_name, absl::string_view endpoint,
                              const std::vector<std::string>& versions) override;
  void DeRegisterPlugin(absl::string_view resource_name, absl::string_view endpoint) override;
  void AnnouncePluginWatcher() override;
  absl::Status Allocate(const Pod& pod, const Container& container) override;
  absl::Status AdmitPod(const Pod& pod) override;
  absl::StatusOr<RunContainerOptions> GetDeviceRunContainerOptions(
      const Pod& pod, const Container& container) override;
  void UpdateAllocatedDevices() override;
  absl::Status ReleasePod(absl::string_view pod_uid) override;
  absl::Status SyncCheckpoint() override;
  TopologyHints GetTopologyHints(const Pod& pod, const Container& container) override;
  TopologyHints GetPodTopologyHints(const Pod& pod) override;
  void UpdateAllocatedResourcesStatus(absl::string_view pod_uid, PodStatus& status) const override;
  std::vector<ResourceUpdate> TakeResourceUpdates() override;

  // The endpoint currently serving `resource_name` (possibly stopped), or null. For tests and
  // for pod admission.
  EndpointSharedPtr GetEndpoint(absl::string_view resource_name) const;

  // Path of kubelet.sock.
  std::filesystem::path KubeletSocket() const;

  // How many admissions are waiting for their plugin to come back (admission_wait), so that a
  // test can act once one is.
  int AdmissionsWaitingForPluginForTest() const ABSL_LOCKS_EXCLUDED(mu_);
  // How many RegisterPlugin calls (probe mode) are under way, their dials included.
  int RegistrationsInFlightForTest() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void StopNow() ABSL_LOCKS_EXCLUDED(mu_);
  // EndpointCallbacks.
  void OnDevicesUpdated(const Endpoint& endpoint, std::vector<Device>&& devices) override;
  void OnStreamEnded(EndpointSharedPtr endpoint, const absl::Status& status) override;
  // RegistrationCallbacks.
  void OnRegister(const v1beta1::RegisterRequest& request, DoneFn done) override;

  // ---- Pod admission (admission.cc).

  // One resource's devices reserved for one container while its plugin is called: counted
  // as in use by every other admission, invisible everywhere else (GetDevices, run options,
  // checkpoint) until committed.
  struct Reservation {
    ReservedDevices devices;
    EndpointSharedPtr endpoint;
    v1beta1::ContainerAllocateResponse response;
  };
  // A resource's devices as the state holds them.
  using SharedTable = std::shared_ptr<const DeviceTable>;
  // Picking one resource's devices for one container, carried from BeginPickLocked across the
  // plugin's GetPreferredAllocation (mu_ released) to FinishPickLocked.
  struct Pick {
    ReservedDevices devices;  // reserved so far
    int64_t required = 0;
    int64_t needed = 0;            // still to pick
    int64_t needed_from_free = 0;  // to pick from the free devices, when picking began
    std::set<std::string> picked;  // devices.ids
    // The free devices when picking began, and their split by the topology manager's affinity.
    IdSet available;
    DevicesByAffinity split;
    // The plugin chooses among the aligned devices (more of them than needed) rather than among
    // all the free ones (every aligned one taken first).
    bool choose_aligned = false;
    // The endpoint to ask for its preferred allocation, and what to ask; null when the plugin
    // does not offer it.
    EndpointSharedPtr ask;
    std::vector<std::string> ask_available;
    std::vector<std::string> ask_must_include;
  };

  // Counts an Allocate or AdmitPod of a pod in progress (admitting_) for its lifetime.
  class AdmittingPod;
  // AllocateContainer is Allocate without the container lookup. It reports its refusals to
  // the metrics itself, so that AdmitPod, which stops at the first, reports one.
  absl::Status AllocateContainer(const Pod& pod, const Container& container,
                                 const AdmittingPod& admitting) ABSL_LOCKS_EXCLUDED(mu_, write_mu_);
  // Refused tells the metrics that an admission was refused for `reason` and returns `status`.
  absl::Status Refused(absl::string_view reason, absl::Status status) ABSL_LOCKS_EXCLUDED(mu_);
  // SkipsDraResources: the gate is on and `pod` maps resources to DRA, which the public calls
  // then leave out (upstream's isDRAExtendedResource).
  bool SkipsDraResources(const Pod& pod) const;
  // ReserveDevices is upstream's devicesToAllocate with reservations: nullopt when there is
  // nothing to allocate. Three steps: BeginPickLocked (mu_ held; may wait for the plugin,
  // admission_wait), GetPreferredAllocation if the plugin offers it (mu_ not held), and
  // FinishPickLocked (mu_ held). On error nothing stays reserved.
  absl::StatusOr<std::optional<ReservedDevices>> ReserveDevices(
      const Pod& pod, const Container& container, const std::string& resource, int64_t required,
      bool sources_ready) ABSL_LOCKS_EXCLUDED(mu_);
  // BeginPickLocked checks the request, marks the allocation in flight, and reserves what can
  // be picked before the plugin is asked: reusable devices, then (when the plugin does not
  // choose among aligned devices only) every aligned one. nullopt when there is nothing to
  // allocate; on error nothing stays reserved.
  absl::StatusOr<std::optional<Pick>> BeginPickLocked(const Pod& pod, const Container& container,
                                                      const std::string& resource, int64_t required,
                                                      bool sources_ready,
                                                      const std::optional<NumaMask>& affinity)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // FinishPickLocked reserves the rest: the plugin's `preferred` devices first, then the
  // others in upstream's order. On error (too few left) nothing of `pick` stays reserved.
  absl::StatusOr<ReservedDevices> FinishPickLocked(const Pod& pod, const Container& container,
                                                   Pick& pick, const IdSet& preferred)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // TakeFreeLocked reserves for `pick` devices of `from` (in order; only those also in
  // `within` when given) that are still healthy and free, until enough are picked; true when
  // done.
  bool TakeFreeLocked(Pick& pick, const IdSet& from, const IdSet* within = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // FreeDevicesLocked: the healthy devices of `table` (the devices of `resource`) that no
  // container holds and no admission has reserved.
  IdSet FreeDevicesLocked(const std::string& resource, const DeviceTable& table) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // TopologyHintsLocked: the hints of one resource for `requested` devices, given what the
  // container (or pod) already holds and the devices it may reuse (upstream's per-resource
  // body of GetTopologyHints).
  std::optional<std::vector<TopologyHint>> TopologyHintsLocked(
      const std::string& resource, int64_t requested, const std::set<std::string>& held,
      const std::set<std::string>& reusable) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // WaitForPluginLocked: for a known resource whose plugin is away, waits up to admission_wait
  // for it to be back with healthy devices that include `held`: a condition wait on mu_, which
  // other threads take meanwhile. It ends early when the manager or its admissions stop.
  void WaitForPluginLocked(const std::string& resource, const std::set<std::string>& held)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool IsDevicePluginResourceLocked(const std::string& resource) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::set<std::string> HeldLocked(absl::string_view pod_uid, absl::string_view container_name,
                                   absl::string_view resource) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ReusableIdsLocked keeps of `ids` (devices of `resource`) those the pod may reuse: held by
  // one of its regular init containers and by none of its sidecars and app containers. A
  // rollback and a container that already holds its devices return devices to reuse through
  // it, so that no device another container holds, or that is free, becomes reusable
  // (containers of one pod admitted at once, the pod forgotten meanwhile).
  template <typename Ids>
  std::vector<std::string> ReusableIdsLocked(const Pod& pod, const std::string& resource,
                                             const Ids& ids) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ReleaseLocked ends an allocation that gave up (Reservations::Release): of the devices it
  // took from reuse, those ReusableIdsLocked keeps are reusable again. mu_ may have been
  // released since they were taken (a plugin was asked), and the pod released and its devices
  // given to another pod meanwhile.
  void ReleaseLocked(const Pod& pod, const Container& container, const ReservedDevices& devices)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // PersistCheckpoint makes every commit up to `generation` durable (group commit: a write by
  // another admission that covered it is enough).
  absl::Status PersistCheckpoint(uint64_t generation) ABSL_LOCKS_EXCLUDED(mu_, write_mu_);
  absl::Status CallPreStartContainerIfNeeded(const Pod& pod, const Container& container,
                                             const std::string& resource) ABSL_LOCKS_EXCLUDED(mu_);

  // AwaitPluginSocket resolves a kubelet.sock endpoint (ResolvePluginSocket) and, while nothing
  // is there, waits for the plugin's socket (until `deadline`, cut short by Stop), refusing
  // anything else that appears there (a symlink included). Blocks.
  absl::StatusOr<std::filesystem::path> AwaitPluginSocket(const std::string& endpoint,
                                                          absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_);

  // ConnectPlugin dials the plugin on `socket` and, unless refused, adds it to the live
  // endpoints of `resource_name` and makes it the one admission calls. An older endpoint on
  // the same socket is replaced and stopped; those on other sockets stay live beside it. Blocks
  // for the dial (until `dial_deadline`) and GetDevicePluginOptions (bounded by its deadline).
  absl::Status ConnectPlugin(const std::string& resource_name, const std::filesystem::path& socket,
                             absl::Time dial_deadline) ABSL_LOCKS_EXCLUDED(mu_);

  // RestoreFromCheckpoint reads the checkpoint at Start (file I/O, so before any other thread
  // can reach the state).
  void RestoreFromCheckpoint() ABSL_LOCKS_EXCLUDED(mu_);
  // WriteCheckpoint snapshots the state under mu_ and writes it outside, logging a failure.
  // `last`: Stop's write, after which nothing is written (stopped_), and none when nothing
  // changed since Start.
  void WriteCheckpoint(bool last = false) ABSL_LOCKS_EXCLUDED(mu_, write_mu_);
  // Each resource's healthy devices as a checkpoint write takes them, shared, not copied:
  // rendered by an earlier write or, if they changed since, as IDs to render outside mu_.
  struct RegisteredSnapshot {
    std::vector<std::shared_ptr<const checkpoint::EncodedRegistered>> rendered;
    std::vector<std::pair<std::string, SharedTable>> unrendered;
  };
  // What a checkpoint write takes from the state under mu_: the entries as rendered when they
  // were committed, and the registered devices.
  struct CheckpointSnapshot {
    std::vector<std::shared_ptr<const checkpoint::EncodedEntry>> entries;
    RegisteredSnapshot registered;
    // What the store's Snapshotting answered when the state was taken.
    uint64_t store_mark = 0;
  };
  // StoreCheckpoint encodes `data` and writes it durably, timing the write for the metrics.
  absl::Status StoreCheckpoint(const CheckpointSnapshot& data)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  CheckpointSnapshot CheckpointSnapshotLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  RegisteredSnapshot RegisteredSnapshotLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RenderRegistered: every resource's registered devices rendered, rendering the snapshot's
  // unrendered ones (kept for later writes while they stay current).
  std::vector<std::shared_ptr<const checkpoint::EncodedRegistered>> RenderRegistered(
      const RegisteredSnapshot& registered) ABSL_LOCKS_EXCLUDED(mu_);
  void RunListeners() ABSL_LOCKS_EXCLUDED(mu_, listeners_mu_);

  // LiveEndpointLocked: the entry of `endpoint` among the live endpoints, if it is still live
  // (not stopped, not replaced on its socket).
  struct LiveEndpoint;
  LiveEndpoint* LiveEndpointLocked(const Endpoint& endpoint) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // DisconnectLocked: `live` (an entry of live_endpoints_) goes and is stopped. The last live
  // endpoint of its resource makes the resource unhealthy and stays as its stopped endpoint
  // for the grace period; otherwise the resource is served as ServingCandidateLocked says. The
  // devices stay healthy unless they were the report of the endpoint that went and none of the
  // others has sent one (then they are unhealthy until one does). Returns the endpoint that
  // went, and the one serving the resource now (null if none).
  std::pair<EndpointSharedPtr, EndpointSharedPtr> DisconnectLocked(const LiveEndpoint& live)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ServingCandidateLocked: the live endpoint that serves `resource_name`: the newest that has
  // sent a snapshot, or while none has, the newest; null when none is live. So a plugin that
  // registers beside one that serves takes over with its first snapshot, never before: a new
  // instance that is slow to report, or never does, is not sent admissions for devices it did
  // not report, and leaves the health of the devices as the one serving reports it.
  LiveEndpoint* ServingCandidateLocked(const std::string& resource_name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ServeLocked: the candidate serves `resource_name` (endpoints_), with its last snapshot as
  // the resource's devices, or, before its first, their health unknown.
  void ServeLocked(const std::string& resource_name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ApplyDevicesLocked: the last snapshot of `source`, the live endpoint serving
  // `resource_name`, becomes the resource's devices (their health known from now on).
  void ApplyDevicesLocked(const std::string& resource_name, LiveEndpoint& source)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // upstream's markResourceUnhealthy, called when the plugin of `resource_name` goes away:
  // every healthy device of it becomes unhealthy, and the health of its devices is no longer
  // known (QueueHealthUpdateLocked for the pods holding some).
  void MarkResourceUnhealthyLocked(const std::string& resource_name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ForgetHealthLocked: the health of the devices of `resource_name` is no longer known (no live
  // plugin vouches for it); the pods holding some are queued for an update if it was.
  void ForgetHealthLocked(const std::string& resource_name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // PodsToUpdateLocked is upstream's half of genericDeviceUpdateCallback that compares health:
  // the pods holding a device of `now` (a new snapshot of `resource_name`) whose health differs
  // in `before` or that `before` lacks; every pod holding a device of it when `first` (the
  // plugin's first snapshot: the health of every device was unknown).
  std::vector<std::string> PodsToUpdateLocked(const std::string& resource_name,
                                              const DeviceTable* before, const DeviceTable& now,
                                              bool first) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // QueueHealthUpdateLocked queues an update for `pod_uids` (if any) without waiting (callers
  // check the gate); when the queue is full the update is dropped and logged from the loop
  // thread.
  void QueueHealthUpdateLocked(std::vector<std::string> pod_uids)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ReportedHealthLocked: the health UpdateAllocatedResourcesStatus reports for one device.
  ResourceHealth ReportedHealthLocked(const std::string& resource_name,
                                      const std::string& device_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // DevicesChangedLocked: the table of `resource_name` in devices_ was replaced (or removed).
  void DevicesChangedLocked(absl::string_view resource_name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ResourceGoneLocked: no endpoint (maps out of sync), or its grace period has expired.
  bool ResourceGoneLocked(const std::string& resource_name, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ScheduleCheckpointLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ScheduleNotifyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ManagerOptions options_;
  const Clock& clock_;
  // options_.metrics, or one that does nothing.
  ManagerMetrics& metrics_;
  // Null when options_.endpoint_factory is given; otherwise the gRPC factory.
  const std::unique_ptr<EndpointFactory> own_endpoint_factory_;
  EndpointFactory& endpoint_factory_;
  // Null when options_.checkpoint_store is given; otherwise a FileStore in plugin_dir.
  const CheckpointStorePtr own_store_;
  CheckpointStore& store_;
  // Set by StopRegistrations before anything else, so that dials in progress give up early.
  std::atomic<bool> connect_cancelled_{false};

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  // Start got as far as serving kubelet.sock: admissions and registrations are taken. A Start
  // that failed leaves it false, so that a host that goes on regardless admits nothing (and
  // writes nothing over a checkpoint it may not have read).
  bool serving_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Set by Stop as it takes the state of its last checkpoint write: ReleasePod and
  // SyncCheckpoint change and write nothing from then on.
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Whether plugin_dir held nothing when Start began (ShouldResetExtendedResourceCapacity).
  std::optional<bool> wiped_at_start_ ABSL_GUARDED_BY(mu_);
  // Set by StopAdmissions and Stop: admissions are refused, and their waits for a plugin end.
  bool admissions_stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Runs StopNow once (common/stop_once.h).
  StopOnce stop_once_;
  enum class Registrations { kOpen, kStopping, kStopped };
  Registrations registrations_ ABSL_GUARDED_BY(mu_) = Registrations::kOpen;
  // RegisterPlugin calls (the plugin watcher's) between their check and their end.
  int registrations_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  // Taken by Stop as it marks every device unhealthy: the registered devices of every later
  // checkpoint write, so that the file keeps them as the plugins last reported them.
  std::optional<RegisteredSnapshot> registered_at_stop_ ABSL_GUARDED_BY(mu_);
  ActivePodsFn active_pods_ ABSL_GUARDED_BY(mu_);
  SourcesReadyFn sources_ready_ ABSL_GUARDED_BY(mu_);
  // Resource name -> the endpoint serving it: the one admission calls (upstream's primary), one
  // of its live endpoints below, or when it has none, the last one stopped, kept through its
  // grace period.
  std::map<std::string, EndpointSharedPtr, std::less<>> endpoints_ ABSL_GUARDED_BY(mu_);
  // A plugin socket connected for a resource, with the devices of its last snapshot (null
  // before its first); only the snapshots of the endpoint serving the resource become its
  // devices, the others are kept for the moment one of them takes over.
  struct LiveEndpoint {
    EndpointSharedPtr endpoint;
    SharedTable last_devices;
    // The order of connection (ServingCandidateLocked).
    uint64_t connected = 0;
    // Its snapshot is the resource's devices now (one endpoint of the resource at most).
    bool supplies_devices = false;
  };
  // Resource name -> socket -> its live endpoint (upstream's endpointStore, PR #139338): plugins
  // on different sockets serve one resource side by side, so that one going away leaves the
  // resource to another (a rolling update that went wrong) instead of making it unhealthy.
  std::map<std::string, std::map<std::filesystem::path, LiveEndpoint>, std::less<>> live_endpoints_
      ABSL_GUARDED_BY(mu_);
  uint64_t connections_ ABSL_GUARDED_BY(mu_) = 0;
  // Resource name -> every device from its plugin's last snapshot, with health and topology. A
  // resource is registered while it has an entry (an empty table until its plugin's first
  // snapshot). Shared (never null, never changed in place) with checkpoint writes, which render
  // the healthy IDs outside mu_.
  std::map<std::string, SharedTable, std::less<>> devices_ ABSL_GUARDED_BY(mu_);
  // Resource name -> its healthy devices rendered for the checkpoint, made by the first write
  // after they change and erased by every change (DevicesChangedLocked), so that a write for
  // one admission neither copies nor renders every device of the node.
  std::map<std::string, std::shared_ptr<const checkpoint::EncodedRegistered>, std::less<>>
      registered_rendered_ ABSL_GUARDED_BY(mu_);
  // Resource name -> the count of devices_' changes when its table last changed (what
  // AllocatableRevisions reports); one entry per entry of devices_.
  std::map<std::string, uint64_t, std::less<>> table_revisions_ ABSL_GUARDED_BY(mu_);
  uint64_t table_changes_ ABSL_GUARDED_BY(mu_) = 0;
  PodDevices pod_devices_ ABSL_GUARDED_BY(mu_);
  // The checkpoint read at Start lost nothing (RestoredWholeCheckpoint).
  bool restored_whole_ ABSL_GUARDED_BY(mu_) = true;
  // Start read the checkpoint: only then may Stop write one (a start that failed before holds
  // nothing, and would write that over the pods' devices).
  bool checkpoint_read_ ABSL_GUARDED_BY(mu_) = false;
  // A device update or removal since Start asked for a checkpoint write. With no such change
  // and no admission committed, Stop leaves the file as Start found it, as upstream (which
  // never writes at Stop) does: a resource restored from it holds no devices until its plugin
  // registers again, and a write would empty its registered devices in the file.
  bool checkpoint_changed_ ABSL_GUARDED_BY(mu_) = false;
  // Resources whose endpoint is live and has sent a snapshot since it connected: the health of
  // their devices is known (ReportedHealthLocked says Unknown for the others).
  std::set<std::string, std::less<>> health_known_ ABSL_GUARDED_BY(mu_);
  // Resources whose plugin went away before it ever sent devices (none in devices_): reported
  // at capacity 0 and without allocatable, as upstream's empty set of unhealthy devices, until
  // a plugin of theirs sends devices or their grace period ends (then reported removed).
  std::set<std::string, std::less<>> gone_without_devices_ ABSL_GUARDED_BY(mu_);
  // Updates for the host (TakeResourceUpdates), with resource_health_status on.
  ResourceUpdateQueue resource_updates_ ABSL_GUARDED_BY(mu_);
  // ListAndWatch streams started and not yet ended (Stop waits for 0).
  int active_streams_ ABSL_GUARDED_BY(mu_) = 0;
  bool checkpoint_write_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool notify_pending_ ABSL_GUARDED_BY(mu_) = false;
  // Devices reserved by admissions in flight, allocations in flight, and each pod's reusable
  // init-container devices.
  Reservations reservations_ ABSL_GUARDED_BY(mu_);
  // What UpdateAllocatedDevices' last pass started from (options_.active_pods_revision, then
  // the allocations' revision), when the host gives that revision.
  std::optional<std::pair<uint64_t, uint64_t>> passed_at_ ABSL_GUARDED_BY(mu_);
  // Admissions inside WaitForPluginLocked's wait.
  int plugin_waits_ ABSL_GUARDED_BY(mu_) = 0;
  // Bumped by every commit of an admission, every freeing of a pod's devices and by
  // SyncCheckpoint; durable_generation_ is the newest one on disk. freed_generation_ is the
  // last freeing's (ReleasePod, a rolled-back allocation, a pass of UpdateAllocatedDevices,
  // which writes nothing): ReleasePod of a pod found holding nothing waits until it is durable,
  // since the pod's devices may be among those freed in memory only.
  uint64_t commit_generation_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t durable_generation_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t freed_generation_ ABSL_GUARDED_BY(mu_) = 0;
  // Pods with an Allocate or AdmitPod in progress: how many calls, and how often ReleasePod
  // released the pod meanwhile. An admission that began before a release commits nothing
  // more, so that a release is never undone by one in flight (AdmittingPod in admission.cc).
  struct Admitting {
    int calls = 0;
    uint64_t releases = 0;
  };
  std::map<std::string, Admitting, std::less<>> admitting_ ABSL_GUARDED_BY(mu_);

  // Serializes checkpoint writes, each snapshotting the state after taking it, so that a
  // later write never carries older state than an earlier one. Held across file I/O (never
  // mu_), so it comes first in the lock order.
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);

  // Held while listeners run, so that Unsubscribe waits out a run in progress. Listeners may
  // call into the manager, so this one comes first in the lock order.
  absl::Mutex listeners_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::map<int, ChangeCallback> listeners_ ABSL_GUARDED_BY(listeners_mu_);
  int next_listener_id_ ABSL_GUARDED_BY(listeners_mu_) = 1;

  // Held by Start from its beginning to its end, and by StopRegistrations to shut the server
  // down: a Stop (or StopRegistrations) that races a Start waits for it, and then stops the
  // server it started, where it found none and the server went on serving after Stop.
  absl::Mutex start_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::unique_ptr<RegistrationServer> server_ ABSL_GUARDED_BY(start_mu_);
  // Last, so that their threads start after and stop before everything they use.
  OperationThreads connect_pool_;
  EventLoop loop_;
};

}  // namespace devmgr::devicemanager
