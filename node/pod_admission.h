// PodAdmission: what the daemon does with a whole pod, for its admin API. Admission walks the
// init containers and then the app containers in order; for each it asks the topology policy
// (when one is configured) with the device manager's hints and allocates (in the policy's pod
// scope it asks once, before the first container, with the pod's hints). A pod that uses
// ResourceClaims then has them stored and prepared by their DRA drivers (as a kubelet does
// before it starts the pod's sandbox). Finally every container's run options are collected
// (calling PreStartContainer where a plugin asks for it; the CDI devices of its claims join
// them). Only then is the pod written to the durable record and reported admitted: staged in
// the registry, then the device manager's checkpoint synced, which writes the record with it
// when the manager's store is the registry's (RecordingCheckpointStore; one flush for both), or,
// for a pod that holds no devices, the record alone. That write also carries the state of the
// pod's prepared claims (SetDra).
// Any failure releases everything the pod got (durably) and forgets it: a refused pod leaves
// no trace.
//
// Calls for one pod UID run one at a time; calls for different pods run in parallel.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/logging.h"
#include "devicemanager/manager.h"
#include "dra/manager.h"
#include "node/claim_allocator.h"
#include "node/claim_store.h"
#include "node/pod_claims.h"
#include "node/pod_registry.h"
#include "podresources/watch_hub.h"
#include "topologymanager/metrics.h"
#include "topologymanager/policy.h"

namespace devmgr::node {

struct ContainerOptions {
  std::string container_name;
  devicemanager::RunContainerOptions options;
};

// Told why the daemon refused an admission, for metrics: one of kDaemonRefusalReasons. Refusals of
// the device manager's Allocate are counted by the manager itself (devicemanager::ManagerMetrics)
// and are not repeated here.
using RefusalFn = std::function<void(absl::string_view reason)>;

class PodAdmission {
 public:
  // None of the references is owned; all must outlive this object.
  PodAdmission(devicemanager::Manager& manager, PodRegistry& registry,
               topologymanager::TopologyPolicy& topology, LoggerPtr logger);

  // SetNotifier: where admitted and removed pods are announced (PodResources Watch); null for
  // none. Set before the first call.
  void SetNotifier(podresources::PodResourcesNotifier* notifier) { notifier_ = notifier; }
  // SetRefusalObserver: told the reason of every admission the daemon's own steps refused.
  // Set before the first call.
  void SetRefusalObserver(RefusalFn observer) { on_refusal_ = std::move(observer); }
  // SetTopologyMetrics: told of each pod's topology admission (not owned; null for none). Set
  // before the first call.
  void SetTopologyMetrics(topologymanager::TopologyMetrics* metrics) {
    topology_metrics_ = metrics;
  }
  // SetDra: the DRA manager and the store of the claims that come with pods (not owned; both
  // must outlive this object). Without them a pod that uses a claim is refused. The registry's
  // writes then carry the DRA manager's (PodRegistry::CarryWith): the write that records an
  // admitted pod also makes its prepared claims durable (dra::FinalWrite::kCarried), one flush
  // for both. Set before the first call.
  void SetDra(dra::Manager* manager, ClaimStore* claims) {
    dra_ = manager;
    claims_ = claims;
    registry_.CarryWith(manager);
  }
  // SetDraExtendedResource: feature gate DRAExtendedResource. Without it a pod's
  // status.extendedResourceClaimStatus is ignored here (the device manager allocates those
  // resources); with it the claim it names is prepared with the pod's own. Set before the first
  // call.
  void SetDraExtendedResource(bool enabled) { dra_extended_resource_ = enabled; }
  // SetClaimAllocator: a node without a scheduler allocates the claims that come with a pod
  // unallocated (not owned; must outlive this object). Without one such a claim is refused when
  // prepared ("... not allocated"). Set before the first call.
  void SetClaimAllocator(const ClaimAllocator* allocator) { allocator_ = allocator; }

  // Admit admits `pod` (with its DRA half `claims`, when it uses ResourceClaims) and answers
  // every container's run options, init containers first. A pod already admitted with the
  // same containers and claims gets its options again; AlreadyExists if they differ or it was
  // recovered from the checkpoint; FailedPrecondition if its claims went with a damaged claim
  // record (LostClaims). A new pod that uses no claim while the DRA manager's state still names
  // its UID (an earlier admission refused, whose claims' unprepare failed) is Unavailable until
  // SyncClaims has unprepared them. Other errors: the device manager's, the topology policy's,
  // the DRA manager's ("prepare dynamic resources: ...") or the records'; then nothing has
  // changed.
  absl::StatusOr<std::vector<ContainerOptions>> Admit(const devicemanager::Pod& pod,
                                                      const PodClaims& claims = {});

  // Remove unprepares the pod's claims (the drivers are called for the claims no other pod
  // uses), frees its devices and forgets it. NotFound when unknown. When a driver cannot
  // unprepare, the pod stays, holding everything, and the error says why: remove it again
  // once the driver is back (a kubelet keeps such a pod terminating). When the checkpoint write
  // that releases its devices fails, they are free in memory only: the pod is gone all the
  // same (the registry keeps it leaving until its release is durable) and the error says so.
  // When the record's write fails after it, the pod stays, holding nothing, and its claims are
  // prepared again (SyncClaims).
  absl::Status Remove(const std::string& pod_uid);

  // SyncClaims is the node's DRA pass, run periodically and when a driver registers: it
  // prepares the claims of admitted pods that are not prepared since the node started (after a
  // restart every claim is prepared again, as upstream), and unprepares the claims of pods the
  // node no longer has (dra::Manager::Reconcile). Failures are logged once per change and
  // retried by the next pass; the first is returned.
  absl::Status SyncClaims();

  // RunOptions: one container's run options. NotFound for an unknown pod or container. The
  // claims of a pod not prepared since the node started (a restart before SyncClaims came to
  // them) are prepared first, so that no container is handed the CDI devices of a claim its
  // driver has not prepared since (after a reboot the driver's CDI specs may be gone); the
  // driver's error otherwise. So does admitting an admitted pod again. FailedPrecondition for a
  // pod whose claims went with a damaged claim record (LostClaims).
  absl::StatusOr<devicemanager::RunContainerOptions> RunOptions(const std::string& pod_uid,
                                                                const std::string& container);

  // NonDevicePluginResources: the extended resources an admitted `pod` asks for (a count above
  // 0) that no container of it holds devices of, in name order. Those are the resources no
  // device plugin served when it was admitted, which the device manager skipped as upstream's
  // allocateContainerResources does (`if !m.isDevicePluginResource(resource) { continue }`);
  // the pod is admitted without them. Resources that DRAExtendedResource gives to DRA are not
  // among them. Reads the device manager's state; never blocks on plugins.
  std::vector<std::string> NonDevicePluginResources(const devicemanager::Pod& pod) const;

  // Stop refuses every later Admit, Remove, RunOptions and SyncClaims (FailedPrecondition, "the
  // node is stopped") before they touch anything: once the node has stopped, no record or
  // checkpoint is written and no driver or plugin is called. Calls in progress finish.
  // Node::Stop calls it first.
  void Stop() { stopped_ = true; }

 private:
  // CheckRunning: FailedPrecondition after Stop.
  absl::Status CheckRunning() const;

  // Holds the per-pod lock for its lifetime.
  class PodLock {
   public:
    PodLock(PodAdmission& owner, std::string uid);
    ~PodLock();
    PodLock(const PodLock&) = delete;
    PodLock& operator=(const PodLock&) = delete;

   private:
    PodAdmission& owner_;
    const std::string uid_;
  };

  // AllocateAll sets `reason` (a metric label) when one of the daemon's own steps failed, and
  // leaves it empty when the device manager refused.
  absl::StatusOr<std::vector<ContainerOptions>> AllocateAll(const devicemanager::Pod& pod,
                                                            const PodClaims& claims,
                                                            absl::string_view& reason);
  // AllocateDevices: the topology manager's part of an admission, every container's alignment
  // and device-plugin devices (AlignAndAllocate), timed for the topology metrics.
  absl::Status AllocateDevices(const devicemanager::Pod& pod, absl::string_view& reason);
  absl::Status AlignAndAllocate(const devicemanager::Pod& pod, absl::string_view& reason);
  // CountAlignment tells the topology metrics of a container or pod aligned or refused, under
  // single-numa-node.
  void CountAlignment(topologymanager::TopologyScope scope, bool aligned);
  // CollectOptions: every container's run options; `claims` (may be null) adds the CDI devices
  // of the claims each container uses.
  absl::StatusOr<std::vector<ContainerOptions>> CollectOptions(const devicemanager::Pod& pod,
                                                               const dra::Pod* claims);
  absl::StatusOr<devicemanager::RunContainerOptions> ContainerRunOptions(
      const devicemanager::Pod& pod, const devicemanager::Container& container,
      const dra::Pod* claims);
  // PreparedSinceStart prepares the claims of an admitted pod unless they are prepared since
  // the node started (dra::Manager::Prepared). The caller holds the pod's lock.
  absl::Status PreparedSinceStart(const dra::Pod& claims) ABSL_LOCKS_EXCLUDED(sync_mu_);
  // Refused logs a refused admission and tells the refusal observer its reason (empty: the
  // device manager refused, and counts that itself).
  void Refused(const devicemanager::Pod& pod, absl::string_view reason, const absl::Status& status);
  // HoldsDevices: the device manager holds devices for some container of `pod`.
  bool HoldsDevices(const devicemanager::Pod& pod) const;
  // LostClaims: FailedPrecondition for an admitted pod that the DRA manager's state names while
  // the claim store holds no claims of it (its entry went with a damaged claim record, or an
  // earlier devmgr admitted its UID without claims while the state still named it): its
  // containers' CDI devices cannot be told. OK for any other pod.
  absl::Status LostClaims(const std::string& pod_uid) const;
  // StoredClaims: the DRA half the claim store holds for the pod.
  std::optional<dra::Pod> StoredClaims(const std::string& pod_uid) const;
  // AllocateAndStore allocates the claims that came unallocated (when the node has an
  // allocator) and stores the pod's claims.
  absl::Status AllocateAndStore(const PodClaims& claims) ABSL_LOCKS_EXCLUDED(allocation_mu_);
  // HeldClaims: the claims whose devices the node's allocator must leave alone, for allocating
  // those `claims` brings unallocated: the ones the claim store keeps, and the ones the DRA
  // manager's state names that the store does not (entries that went with a damaged claim
  // record, or whose unprepare failed when their pod was refused), each holding its prepared
  // devices whole, under no UID so that none is taken for a claim the node holds.
  // When `claims` brings one of the latter unallocated, whose allocation is not known:
  // FailedPrecondition while a pod that uses it is admitted, Unavailable once none is (the sync
  // unprepares it).
  absl::StatusOr<std::vector<dra::ResourceClaim>> HeldClaims(const PodClaims& claims) const;
  // ForgetClaims undoes what an admission did with the pod's claims.
  void ForgetClaims(const dra::Pod& claims);
  // Forget drops what the node keeps for a pod that was removed: its claims (`had_claims`),
  // their sync errors and its topology, and tells the notifier.
  void Forget(const std::string& pod_uid, bool had_claims) ABSL_LOCKS_EXCLUDED(sync_mu_);

  devicemanager::Manager& manager_;
  PodRegistry& registry_;
  topologymanager::TopologyPolicy& topology_;
  const LoggerPtr logger_;
  podresources::PodResourcesNotifier* notifier_ = nullptr;
  RefusalFn on_refusal_;
  topologymanager::TopologyMetrics* topology_metrics_ = nullptr;
  dra::Manager* dra_ = nullptr;
  ClaimStore* claims_ = nullptr;
  const ClaimAllocator* allocator_ = nullptr;
  bool dra_extended_resource_ = false;
  std::atomic<bool> stopped_{false};
  // Held from allocating a pod's claims until they are in the claim store, so that two pods
  // are not given the same device.
  absl::Mutex allocation_mu_;

  absl::Mutex locks_mu_;
  absl::CondVar released_;
  std::set<std::string> busy_ ABSL_GUARDED_BY(locks_mu_);

  absl::Mutex sync_mu_;
  // The last SyncClaims error logged for each pod, so a failure that repeats is logged once.
  std::map<std::string, std::string> sync_errors_ ABSL_GUARDED_BY(sync_mu_);
};

}  // namespace devmgr::node
