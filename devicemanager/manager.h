// The device manager's embedding API: what a host node agent (a kubelet, an edge agent, the
// devmgr daemon) creates and calls. The Manager runs the device plugin registration server on
// `<plugin_dir>/kubelet.sock`, keeps an endpoint per registered resource and plugin socket (the
// newest that reported serving the resource, the others taking over if it goes) with its devices
// and their health, reports capacity and allocatable for node status (keeping a vanished plugin's
// resource through a grace period), and keeps `kubelet_internal_checkpoint` in the same format as a
// real kubelet, restoring from it at Start.
//
// Ownership and threads: the host owns the Manager (ManagerPtr). Every method is thread-safe.
// Unless a method says otherwise it never blocks on a plugin or on disk: state lives behind one
// mutex that is never held across an RPC or file I/O. The manager has its own event-loop
// thread (checkpoint writes, change notifications) and a connect thread for each plugin being
// dialled after it called Register (up to connect_threads, ending once none is); Stop joins them
// all.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "checkpoint/checkpoint.h"
#include "common/clock.h"
#include "common/logging.h"
#include "devicemanager/checkpoint_store.h"
#include "devicemanager/endpoint.h"
#include "devicemanager/metrics.h"
#include "devicemanager/pod.h"
#include "devicemanager/pod_status.h"
#include "devicemanager/resource_updates.h"
#include "devicemanager/run_options.h"
#include "devicemanager/topology_hints.h"
#include "devicemanager/types.h"

namespace devmgr::devicemanager {

struct ManagerOptions {
  // Folder of kubelet.sock, the plugins' sockets and the checkpoint. Created with mode 0750.
  std::filesystem::path plugin_dir = "/var/lib/kubelet/device-plugins";
  // File name of the checkpoint inside plugin_dir (a plain name, see FileStore::IsValidName).
  std::string checkpoint_name = std::string(checkpoint::kCheckpointFileName);

  // How long a resource whose plugin went away stays registered (capacity kept, allocatable 0).
  absl::Duration endpoint_stop_grace_period = kEndpointStopGracePeriod;
  // Deadline of the blocking dial of a plugin (upstream: 10 s).
  absl::Duration dial_timeout = kDefaultDialTimeout;
  // Deadline of GetDevicePluginOptions, Allocate and GetPreferredAllocation (upstream: none).
  absl::Duration plugin_call_timeout = kDefaultPluginCallTimeout;
  // Deadline of PreStartContainer (upstream: 30 s).
  absl::Duration pre_start_timeout = kPreStartContainerTimeout;
  // Largest message accepted from a plugin (upstream: gRPC's 4 MiB default).
  int max_message_bytes = kDefaultMaxMessageBytes;
  // Delay that coalesces checkpoint writes after ListAndWatch updates. Stop writes what is
  // still pending.
  absl::Duration checkpoint_write_delay = absl::Milliseconds(20);
  // Most Register calls whose plugins are dialled at once, each on a thread started for it (a
  // hung plugin holds one for its deadlines); more wait for one, and their dial timeout starts
  // once they have it. Upstream dials on each call's own goroutine: this is far above the
  // plugins a node runs, so that plugins that hang do not delay the registration of the others.
  int connect_threads = 64;

  // How long Allocate waits for the plugin of a known resource (one whose plugin went away
  // within its grace period, or one restored from the checkpoint) to register again and report
  // healthy devices, instead of failing at once. 0 is upstream's behaviour (fail at once); the
  // devmgr daemon uses 30 s so that pods admitted just after a reboot survive slow plugins.
  // Measured on the real clock.
  absl::Duration admission_wait = absl::ZeroDuration();
  // The host's topology manager: the NUMA affinity admitted per container. Null means none
  // (every device is "no topology"). Not owned; must outlive the Manager.
  const TopologyAffinityStore* topology_affinity = nullptr;
  // The machine's NUMA node IDs for topology hints; empty means the nodes the devices report.
  // Each in 0..63 (a topology mask's bits), none twice: Start refuses others.
  std::vector<int> numa_nodes;
  // The most NUMA nodes of numa_nodes topology hints are generated over (each hint list tries
  // every subset of them, 2^n, under the manager's lock): past it a resource has no preference.
  // Upstream's topology manager policy option max-allowable-numa-nodes, 8 unless a kubelet sets
  // it, and at least 8 (Start refuses less); a host whose numa_nodes lists more sets it to as
  // many. The nodes the devices report (numa_nodes empty) keep the default.
  size_t max_allowable_numa_nodes = kMaxNumaNodesForHints;
  // A number that changes whenever a pod leaves what the host's ActivePodsFn answers (Start).
  // With it, UpdateAllocatedDevices skips its pass over the pods that hold devices while
  // neither this number nor the allocations changed since its last pass, which found nothing
  // to free then and would find nothing now (beyond upstream, which passes every time: with
  // 1,000 pods the pass is a few hundred microseconds of each PodResources List). Null passes
  // every time. Called from any thread, without the Manager's locks held.
  std::function<uint64_t()> active_pods_revision;
  // Containers (pod UID, container name) already running when the host started. Until the
  // host's sources are ready they are not allocated again (upstream's kubelet-restart path).
  std::set<std::pair<std::string, std::string>> running_containers;
  // Where the checkpoint is read and written; null means a FileStore in plugin_dir
  // (CheckpointStoreImpl). Not owned; must outlive the Manager.
  CheckpointStore* checkpoint_store = nullptr;
  // The host makes admissions durable itself: Allocate and AdmitPod keep what they allocate in
  // memory and leave the checkpoint write to the host's SyncCheckpoint, which it calls before
  // it reports the admission done (devmgr serve does, to write its pod record in the same flush
  // through its checkpoint_store). Beyond upstream, whose Allocate writes each time. A crash
  // before the sync finds the allocation in the checkpoint only if another write carried it.
  bool host_syncs_admissions = false;
  // Feature gate ResourceHealthStatus (KEP-4680): queue a ResourceUpdate for the pods holding
  // devices whose health changed, for TakeResourceUpdates. Off by default, as upstream's gate
  // (alpha, off, through Kubernetes 1.35); the devmgr daemon turns it on.
  bool resource_health_status = false;
  // Feature gate DRAExtendedResource (KEP-5004): a container resource that the pod's
  // dra_resource_mappings give to DRA is not allocated here (upstream's isDRAExtendedResource).
  // Off by default, as upstream's alpha gate; without it such a resource is allocated as any.
  bool dra_extended_resource = false;
  // Makes the endpoint of each plugin that registers; null means gRPC endpoints with the
  // deadlines above (EndpointFactoryImpl). Not owned; must outlive the Manager.
  EndpointFactory* endpoint_factory = nullptr;

  // Time source of stop times and the grace period; null means MonotonicClock(). Not owned; must
  // outlive the Manager.
  const Clock* clock = nullptr;
  // Told about registrations, plugin Allocate calls, refused admissions and checkpoint
  // writes; null tells no one. Not owned; must outlive the Manager.
  ManagerMetrics* metrics = nullptr;
  // Where the manager logs; null logs nothing.
  LoggerPtr logger;
};

class Manager {
 public:
  // The UIDs of the pods that are active on the node.
  using ActivePodsFn = std::function<std::vector<std::string>()>;
  // Whether the host has heard from all its pod sources since it started.
  using SourcesReadyFn = std::function<bool()>;
  // Called after capacity, allocatable or device health may have changed.
  using ChangeCallback = std::function<void()>;

  virtual ~Manager() = default;

  // Start restores from the checkpoint (a corrupt one is logged, copied with a ".corrupt"
  // suffix, beside earlier copies of other bytes, and ignored; the next write replaces it), creates
  // plugin_dir, removes stale sockets in it (only sockets) and, when the checkpoint store is its
  // own, the temporary files that interrupted checkpoint writes left
  // (FileStore::RemoveTemporaries), and starts serving kubelet.sock. Restored resources get stopped
  // endpoints with stop time = now. Blocks on disk I/O. Errors: InvalidArgument (bad paths),
  // Unavailable (cannot listen), the error's own code for a folder that cannot be created
  // (PermissionDenied, FailedPrecondition for a path through a file), FailedPrecondition when
  // called twice or after Stop. The functions are kept for pod admission and must be callable from
  // any thread until Stop returns. A null `sources_ready` is always ready (upstream's stub); a null
  // `active_pods` lists no pod, and then the manager frees a pod's devices only on ReleasePod.
  // After a failed Start the manager admits nothing, registers no plugin and writes no
  // checkpoint (FailedPrecondition): Stop it and make a new one.
  virtual absl::Status Start(ActivePodsFn active_pods, SourcesReadyFn sources_ready) = 0;

  // Stop stops serving kubelet.sock and waits for registrations in flight, cut short
  // (StopRegistrations), ends every ListAndWatch stream and waits for it, and writes the
  // checkpoint unless nothing since Start changed what it holds (then the file stays as Start
  // read it, as a kubelet, which never writes at its stop, leaves it). Blocks. Idempotent (a Stop
  // called while another runs returns when that one has); safe without Start. No change
  // callback runs after it returns. Not from a change callback (it joins the thread those run
  // on).
  virtual void Stop() = 0;

  // StopRegistrations is Stop's first part, for a host that stops its plugin watcher next: it
  // stops serving kubelet.sock, refuses every registration from then on (kubelet.sock's and
  // RegisterPlugin's), cuts the dials and handshakes in flight short and waits for the
  // registrations under way to end. Plugins already connected keep their streams. Without it a
  // watcher's Stop waits for a handler call that a plugin which never answers holds (up to
  // dial_timeout and plugin_call_timeout). Blocks briefly (up to a second for kubelet.sock's
  // server). Idempotent; safe without Start, which then fails. Not from a plugin handler call
  // (it waits for those to end).
  virtual void StopRegistrations() = 0;

  // StopAdmissions is Stop's part for a host that ends its own admission calls before it stops
  // the manager (a server whose shutdown waits for its calls): every admission from then on is
  // refused, and one waiting for its plugin to come back (ManagerOptions::admission_wait) stops
  // waiting and is refused, "the device manager is stopping". Admissions past that wait finish
  // as they would. Idempotent; Stop does it too.
  virtual void StopAdmissions() = 0;

  // GetCapacity reports capacity and allocatable of every live resource and removes resources
  // whose grace period has expired (reported once in `removed`; the checkpoint is rewritten).
  virtual CapacityResult GetCapacity() = 0;

  // GetAllocatableDevices is every healthy device of every resource; a resource without one is
  // not in it (upstream's lists it with no devices; PodResources answers the same for both).
  virtual ResourceDevices GetAllocatableDevices() const = 0;
  // GetAllocatableDevices(resource_name): one resource's part of it (empty for a resource the
  // manager does not know).
  virtual DeviceMap GetAllocatableDevices(absl::string_view resource_name) const = 0;
  // AllocatableRevisions: for each resource with devices, healthy or not, a number that changes
  // whenever that resource's part may have changed (its plugin's devices, their health or
  // topology), so that a reader may keep what it built from one resource until it changes.
  virtual std::map<std::string, uint64_t> AllocatableRevisions() const = 0;

  // GetDevices is what one container holds (empty if nothing), with current health.
  virtual ResourceDevices GetDevices(absl::string_view pod_uid,
                                     absl::string_view container_name) const = 0;

  // AllocationsRevision changes whenever the devices GetDevices reports for some container may
  // have changed (an allocation made, freed or restored; not a change of health), so that a
  // reader may keep what it built from them until it changes.
  virtual uint64_t AllocationsRevision() const = 0;
  // PodAllocationsRevision: the same for the containers of one pod (0 while it holds nothing).
  virtual uint64_t PodAllocationsRevision(absl::string_view pod_uid) const = 0;
  // PodsChangedSince: the UIDs of the pods whose allocations changed after `revision` (an
  // AllocationsRevision), sorted, so that a reader updates only what they hold; nullopt when
  // the manager can no longer tell (over a thousand changes ago, or before its restore).
  virtual std::optional<std::vector<std::string>> PodsChangedSince(uint64_t revision) const = 0;

  // Allocations is every allocation held (those restored from the checkpoint at Start
  // included) as checkpoint entries, in pod, container and resource order: what a host that
  // recovers its pods from the checkpoint needs, without reading the file a second time.
  virtual std::vector<checkpoint::PodDevicesEntry> Allocations() const = 0;
  // RestoredWholeCheckpoint: the checkpoint read at Start was there whole, or not there at all;
  // false when it could not be read or verified, or some entries' Allocate answers did not
  // parse: then Allocations lacks allocations a pod held before the restart.
  virtual bool RestoredWholeCheckpoint() const = 0;

  // GetResourceSummaries is every resource that has an endpoint, in name order, with the
  // endpoint's state and the resource's healthy and unhealthy device counts. Never blocks.
  virtual std::vector<ResourceSummary> GetResourceSummaries() const = 0;

  // UpdatePluginResources is upstream's method of the same name, for a host that checks a pod's
  // resources against the node's allocatable at admission (the scheduler's fit): when
  // `pod_uid` holds devices, each resource of which pods hold devices gets at least as many in
  // the answer as are held (a node whose plugin is gone, or not back after a restart, reports
  // less), so that the pods that already hold them are not refused. It never lowers a value;
  // for a pod that holds nothing the answer is `allocatable` as it came. Never blocks.
  virtual std::map<std::string, int64_t> UpdatePluginResources(
      absl::string_view pod_uid, std::map<std::string, int64_t> allocatable) const = 0;

  // ShouldResetExtendedResourceCapacity: plugin_dir held nothing (no checkpoint, no socket)
  // when Start began, or before Start holds nothing now; a folder that does not exist holds
  // nothing. I.e. the node's device state was wiped and extended resources in node status
  // should be zeroed. False when the folder cannot be listed. Reads the folder before Start.
  virtual bool ShouldResetExtendedResourceCapacity() const = 0;

  // UpdateAllocatedResourcesStatus fills the device part of one pod's status (upstream's method
  // of the same name, KEP-4680): for each container of `status` that holds devices, one
  // ResourceStatus per resource with every device the container holds, in ID order, replacing
  // the entry of that resource name or appended; other entries and containers that hold nothing
  // are left as they are. Health: as the resource's plugin last reported the device; Healthy
  // for a device its latest snapshot does not list (as upstream); Unknown while the resource's
  // plugin is away (gone within its grace period, removed, restored from the checkpoint and not
  // registered again, or registered but yet to send its devices), where upstream keeps the
  // last report. Upstream's kubelet calls it only with the gate on; here it always works. Never
  // blocks.
  virtual void UpdateAllocatedResourcesStatus(absl::string_view pod_uid,
                                              PodStatus& status) const = 0;

  // TakeResourceUpdates removes and returns the updates queued since the last call, oldest
  // first (upstream's Updates() channel, drained). With resource_health_status on, the manager
  // queues one when a plugin's snapshot changes the health of a device some pod holds, or lists
  // a held device it did not list before (the pods holding those devices), when a plugin's first
  // snapshot arrives after it was away, and (beyond upstream, since health becomes Unknown) when
  // it goes away (the pods holding devices of its resource). At most kResourceUpdatesCapacity
  // wait: when the host does not take them, newer ones are dropped and logged, as upstream's
  // full channel. A queued update also runs the change callbacks (Subscribe), the natural place
  // to take them. Thread-safe; never blocks.
  virtual std::vector<ResourceUpdate> TakeResourceUpdates() = 0;

  // Subscribe registers `callback`, run on the manager's loop thread after changes (coalesced:
  // one run may cover many changes). It may call back into the Manager but must not block
  // for long. Returns an id for Unsubscribe.
  virtual int Subscribe(ChangeCallback callback) = 0;
  // Unsubscribe: the callback never runs after this returns; waits for a run in progress.
  // Subscribe and Unsubscribe must not be called from a change callback.
  virtual void Unsubscribe(int id) = 0;

  // The three calls of a plugin-watcher "DevicePlugin" handler (probe-mode registration
  // through plugins_registry). ValidatePlugin checks the versions and the resource name, with
  // upstream's texts. RegisterPlugin dials the socket `endpoint`, any absolute path as
  // upstream (plugins keep it in plugins_registry/ or plugins/<name>/), and connects it as
  // Register does; it blocks for at most the dial and call deadlines. Dialling is all it does
  // with the path: nothing is created or removed there. DeRegisterPlugin disconnects the resource's
  // live endpoint on `endpoint` (another of its sockets may then serve it; with none, it does
  // nothing); never blocks.
  virtual absl::Status ValidatePlugin(absl::string_view resource_name, absl::string_view endpoint,
                                      const std::vector<std::string>& versions) = 0;
  virtual absl::Status RegisterPlugin(absl::string_view resource_name, absl::string_view endpoint,
                                      const std::vector<std::string>& versions) = 0;
  virtual void DeRegisterPlugin(absl::string_view resource_name, absl::string_view endpoint) = 0;
  // AnnouncePluginWatcher: the host hands these three calls to its plugin watcher. As a
  // kubelet does when it takes the device manager's handler (GetPluginHandler), it creates the
  // empty file DEPRECATION in the plugin folder, which tells device plugins that registration
  // through plugins_registry/ is taken; never through a symlink, never waiting on a FIFO. A
  // failure is only logged, as upstream's. Blocks on disk I/O. Call after Start.
  virtual void AnnouncePluginWatcher() = 0;

  // ---- Pod admission. `container` must be one of `pod`'s containers (by name). Admission
  // calls block the calling thread on plugins (each call bounded by its deadline, see
  // ManagerOptions), on the checkpoint write and, for a known resource whose plugin is away,
  // on ManagerOptions::admission_wait. Admissions of different pods and resources run in
  // parallel; no device is ever handed to two admissions at once.

  // Allocate gives `container` its devices for every device-plugin resource it requests:
  // devices are picked (reusing those of the pod's regular init containers, preferring the
  // topology manager's affinity and the plugin's preferred allocation), each resource's plugin
  // is called once with Allocate, and the checkpoint is written and synced before OK (with
  // host_syncs_admissions, by SyncCheckpoint). All or nothing: on any error nothing of this
  // call stays (no device held, checkpoint unchanged), and the error has upstream's text. A
  // container that already holds its devices is not allocated again. Resources the manager has
  // never heard of are skipped (they are not device-plugin resources). The pod must be in the
  // host's active list (active_pods), or the garbage collection that runs first frees what its
  // earlier containers got. Errors: FailedPrecondition when not running, Unavailable for an
  // admission that Stop or StopAdmissions cut short, InvalidArgument for a negative count, NotFound
  // for a container not in the pod or an unregistered resource, ResourceExhausted for too few
  // healthy devices, Aborted while another admission of the same container is in flight or when
  // ReleasePod released the pod meanwhile, DeadlineExceeded / Unavailable / the plugin's status for
  // a failed plugin call, the store's error for a failed checkpoint write; texts as upstream.
  virtual absl::Status Allocate(const Pod& pod, const Container& container) = 0;

  // SyncCheckpoint writes the checkpoint with everything allocated so far, or waits for a write
  // that began after the call, and returns once it is durable: the store's error otherwise.
  // With host_syncs_admissions, what makes an admission durable; concurrent calls share
  // writes. Blocks on disk. FailedPrecondition unless Start succeeded, and after Stop.
  virtual absl::Status SyncCheckpoint() = 0;

  // AdmitPod allocates every init container, then every app container, in order; if one
  // fails, everything the pod got in this call is released (its checkpoint entries removed
  // and written) and the error is returned. Blocks like Allocate.
  virtual absl::Status AdmitPod(const Pod& pod) = 0;

  // GetDeviceRunContainerOptions: for each device-plugin resource `container` requests, calls
  // the plugin's PreStartContainer (30 s deadline) if it asks for it, re-allocates if the
  // devices are not cached but the pod is active, then merges the cached Allocate responses
  // (see MergeRunContainerOptions; resources in name order). Empty options when the container
  // holds nothing (upstream's nil). Blocks on plugins.
  virtual absl::StatusOr<RunContainerOptions> GetDeviceRunContainerOptions(
      const Pod& pod, const Container& container) = 0;

  // UpdateAllocatedDevices frees the devices of every pod not in the active list, once the
  // host's sources are ready (otherwise it does nothing). Does not write the checkpoint
  // (the next write drops them, as upstream). Calls active_pods outside the manager's lock.
  virtual void UpdateAllocatedDevices() = 0;

  // ReleasePod frees every device `pod_uid` holds (and its reusable init-container devices)
  // and makes the checkpoint durable before returning, for a host that knows a pod has ended
  // and must not find it in the checkpoint after a crash (beyond upstream, which frees only
  // through UpdateAllocatedDevices and writes later). For a pod that holds nothing it returns
  // once the last freeing of devices is durable (the pod's may have been freed in memory only,
  // by UpdateAllocatedDevices or by a release whose write failed): at once when it is. An
  // Allocate or AdmitPod of the pod in progress commits nothing more (Aborted): the release
  // stands. The store's error when the write fails (the devices stay free); FailedPrecondition
  // after Stop, which wrote the last checkpoint. Blocks on disk.
  virtual absl::Status ReleasePod(absl::string_view pod_uid) = 0;

  // GetTopologyHints / GetPodTopologyHints are the hint provider of a host topology manager
  // (upstream's topology_hints.go), per container or for the whole pod. Both run
  // UpdateAllocatedDevices first; never block on plugins.
  virtual TopologyHints GetTopologyHints(const Pod& pod, const Container& container) = 0;
  virtual TopologyHints GetPodTopologyHints(const Pod& pod) = 0;
};

using ManagerPtr = std::unique_ptr<Manager>;

// CreateManager makes a Manager that is not started yet.
ManagerPtr CreateManager(ManagerOptions options);

}  // namespace devmgr::devicemanager
