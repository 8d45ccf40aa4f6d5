// dra::Manager: Dynamic Resource Allocation on the node, the kubelet's DRA manager
// (pkg/kubelet/cm/dra) as a module a node agent embeds beside devicemanager::Manager. Before a
// pod's sandbox starts the host calls PrepareResources: each ResourceClaim the pod uses is
// prepared by its drivers (NodePrepareResources, one call per driver with every claim of the
// pod), once however many pods share it. The host then asks GetResources for each container's
// CDI device names, and UnprepareResources once the pod's containers have all stopped (the
// drivers are called when the last pod using a claim lets go).
//
// Unlike device plugin allocation this is not admission: a missing or slow driver fails the
// call, the pod stays pending, and the host retries later (as the kubelet's pod sync does).
// Every call is idempotent. A driver that hangs blocks only the calls for pods that use it, and
// for pods that share a claim with one of those (a prepare and an unprepare of one claim wait
// for each other), for at most the call timeout.
//
// State: the prepared claims are kept in `<state_dir>/dra_manager_state`, byte-compatible with
// the kubelet's (dra/checkpoint.h), written durably before and after the drivers are called
// (the host may carry the second write on one of its own: FinalWrite::kCarried).
// After a restart the claims are known again but not prepared: the next PrepareResources calls
// the drivers again (they must be idempotent), as upstream. A corrupt file is renamed
// `dra_manager_state.corrupt` (or `.corrupt.N` beside earlier copies), logged, and the manager
// starts empty; one that cannot be renamed fails Create and is left as it was.
//
// Drivers register through the plugin watcher (type "DRAPlugin"); drivers() takes the watcher's
// handler calls.
//
// Thread-safety: every method may be called from any thread at once. The manager's lock is
// never held across a driver call, a ClaimSource call or a checkpoint write; calls that change
// the state at the same time share checkpoint writes (a group commit), so concurrent pods are
// not serialised on the disk.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/durable_writer.h"
#include "common/file_store.h"
#include "common/logging.h"
#include "dra/checkpoint.h"
#include "dra/claim.h"
#include "dra/claim_health.h"
#include "dra/driver_registry.h"
#include "dra/health_cache.h"
#include "dra/metrics.h"
#include "dra/slice_cleanup.h"
#include "dra/slice_wiper.h"

namespace devmgr::dra {

struct ManagerOptions {
  // The folder of dra_manager_state (a kubelet's root folder).
  std::filesystem::path state_dir;
  // Where ResourceClaims come from. Not owned; required; must outlive the Manager.
  ClaimSource* claims = nullptr;
  // Feature gate DRAExtendedResource (KEP-5004): the claim named by a pod's
  // status.extendedResourceClaimStatus is prepared with the pod's own claims, and its requests
  // go to the containers its mappings name.
  bool extended_resource = false;
  // Feature gate DRAOptionalNodeOperations (KEP-5945, alpha): a driver whose devices in a claim
  // all skip NodePrepareResources (their ResourceSlice's skipNodeOperations, copied into the
  // allocation) is neither looked up nor called to prepare the claim, and likewise for
  // NodeUnprepareResources, so a driver with no node plugin can serve pods. Off, a claim whose
  // allocation skips anything fails PrepareResources; a claim recorded with skips is still
  // unprepared without the drivers it skips, so a pod prepared before never waits for them.
  bool optional_node_operations = false;
  // Feature gate DRAWorkloadResourceClaims (KEP-5729, alpha): a pod may use a claim reserved
  // for its PodGroup, and one made from a template for that PodGroup (dra/claim_name.h).
  bool workload_resource_claims = false;
  // Deadline of each call to a driver (upstream's default, 45 s).
  absl::Duration call_timeout = kDefaultCallTimeout;
  // The checkpoint layout written: the newest kubelet's by default, kNoShareId for a node that
  // may go back to a kubelet that predates ShareID.
  Layout checkpoint_layout = Layout::kShareId;
  // Told of every operation and driver call (dra/metrics.h). Not owned; may be null; must
  // outlive the Manager.
  ManagerMetrics* metrics = nullptr;
  // Feature gate ResourceHealthStatus (KEP-4680) for DRA: each endpoint of a driver that serves
  // DRAResourceHealth gets a health stream, reopened after `health_retry_period`; device health
  // is kept in <state_dir>/dra_health_state and read by ContainerResourceStatuses.
  bool resource_health_status = false;
  absl::Duration health_retry_period = kHealthStreamRetryPeriod;
  // Called on a health stream's thread with the UIDs of the pods whose claims hold a device whose
  // health changed (upstream's update channel). Must not block for long.
  std::function<void(const std::vector<std::string>& pod_uids)> on_health_change;
  // Removes the node's ResourceSlices (dra/slice_wiper.h): all of them at start, and a driver's
  // once it has had no connected endpoint for `wiping_delay`. Not owned; may be null (nothing is
  // wiped, as a kubelet without an API client); must outlive the Manager.
  SliceWiper* slice_wiper = nullptr;
  absl::Duration wiping_delay = kDefaultWipingDelay;
  // Where checkpoint writes go: a writer that adds its own pending files to the same flush (the
  // node's claim store). Null writes the checkpoint alone. Not owned; must outlive the Manager.
  DurableWriter* writer = nullptr;
  // Time source of device health, its timeouts and the wiping delay; null means RealClock() for
  // the health (its times are kept in a file and read back after a restart) and MonotonicClock()
  // for the delay. Not owned.
  const Clock* clock = nullptr;
  LoggerPtr logger;
};

// A claim the manager holds, as Claims() answers.
struct ClaimSnapshot {
  ClaimInfoState state;
  // Prepared by its drivers since this manager started.
  bool prepared = false;
};

// FinalWrite: who makes a prepared pod's state durable once its drivers have answered.
enum class FinalWrite {
  // PrepareResources, before it returns (upstream).
  kNow,
  // The host, before it starts the pod: a write of its own that carries the manager's
  // (the manager is the host's DurableWriter), or Flush. Until then a crash leaves the claims
  // recorded for the pod but not their devices, which the next PrepareResources asks for again.
  kCarried,
};

class Manager final : public DurableWriter, private HealthSink {
 public:
  // Create reads the checkpoint (or writes an empty one when there is none); without a writer
  // it first removes the temporary files that interrupted writes left in the state folder.
  // Errors: an options error (InvalidArgument), or a state folder that cannot be written.
  static absl::StatusOr<std::unique_ptr<Manager>> Create(ManagerOptions options);
  // Stops the health streams first: none reports to a manager that is going.
  ~Manager() override;
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // The registered drivers; the host forwards the plugin watcher's "DRAPlugin" calls here.
  DriverRegistry& drivers() { return drivers_; }
  // The ResourceSlice wipes; null without a slice_wiper.
  SliceCleanup* slice_cleanup() { return slice_cleanup_.get(); }

  // PrepareResources prepares every claim of `pod` (upstream's three passes): resolve each pod
  // claim's name (skipping a template that produced no claim), fetch the claim, check the pod
  // owns a template-generated claim and is in its reservedFor, that it is allocated and that
  // every driver of it is registered; only then record the pod in the cache and the
  // checkpoint, call NodePrepareResources once per driver for the claims not yet prepared, store
  // the devices returned and write the checkpoint again. Errors are wrapped "prepare dynamic
  // resources: ..." with upstream's texts; nothing is recorded when the first pass fails.
  // With FinalWrite::kCarried the last write is left to the host.
  absl::Status PrepareResources(const Pod& pod, FinalWrite final_write = FinalWrite::kNow)
      ABSL_LOCKS_EXCLUDED(mu_, write_mu_);

  // Flush makes every change so far durable (nothing is written when it already is).
  absl::Status Flush() ABSL_LOCKS_EXCLUDED(mu_, write_mu_);

  // DurableWriter: the checkpoint, when it has changes not yet written, renamed before `files`
  // (through the options' writer).
  absl::Status WriteTogether(std::vector<FileStore::PlacedBytes> files) override
      ABSL_LOCKS_EXCLUDED(mu_, write_mu_);

  // GetResources: the CDI device names for `container` from the claims it uses (filtered by
  // the request it names), in the order of its claims, then those of the requests of the pod's
  // extended-resource claim mapped to a resource it requests. Error when a claim it uses is not
  // known to the manager; like upstream's, it does not check that the claim is prepared (a
  // claim recorded whose driver then failed gives no devices), so a host asks Prepared first
  // and prepares what is not, as node/pod_admission.cc does.
  absl::StatusOr<std::vector<std::string>> GetResources(const Pod& pod,
                                                        const Container& container) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // UnprepareResources lets `pod` go of its claims: a claim other pods still use only loses the
  // pod; the others are unprepared (one NodeUnprepareResources per driver), forgotten and the
  // checkpoint written. Claim names come from the cache, or from the pod when the cache has
  // none for it. Errors are wrapped "unprepare dynamic resources: ..."; a missing driver is an
  // error (the host retries once it is back).
  absl::Status UnprepareResources(const Pod& pod) ABSL_LOCKS_EXCLUDED(mu_);

  // PodMightNeedToUnprepareResources: some claim still records the pod.
  bool PodMightNeedToUnprepareResources(absl::string_view pod_uid) const ABSL_LOCKS_EXCLUDED(mu_);

  // GetContainerClaimInfos: copies of the state of each claim `container` uses, in the order of
  // the pod's claims ("unable to get information for ResourceClaim NAME" when one is not
  // known), then the pod's extended-resource claim if a mapping names the container.
  absl::StatusOr<std::vector<ClaimInfoState>> GetContainerClaimInfos(
      const Pod& pod, const Container& container) const ABSL_LOCKS_EXCLUDED(mu_);
  // Prepared: every claim `pod` uses is prepared since this manager started, for this pod among
  // others, and no driver was asked to unprepare it since.
  bool Prepared(const Pod& pod) const ABSL_LOCKS_EXCLUDED(mu_);
  // ClaimsRevision: a number that changes whenever the claims' states (their pods, devices,
  // CDI devices, whether prepared) may have changed, so that a reader may keep what it built
  // from GetContainerClaimInfos until it changes.
  uint64_t ClaimsRevision() const ABSL_LOCKS_EXCLUDED(mu_);

  // ContainerResourceStatuses: the DRA entries of `container`'s allocatedResourcesStatus
  // ("claim:<pod claim>" or "claim:<pod claim>/<request>", each device with its health as its
  // driver last reported it, Unknown once the report is older than its timeout). A claim that
  // does not resolve yet or is not in the cache is left out, the others reported. Empty without the
  // ResourceHealthStatus gate.
  std::vector<ResourceStatus> ContainerResourceStatuses(const Pod& pod,
                                                        const Container& container) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Claims: a copy of every claim held, by namespace and name.
  std::vector<ClaimSnapshot> Claims() const ABSL_LOCKS_EXCLUDED(mu_);
  // ClaimsInUse: the claims prepared since the start, per driver that prepared devices of them,
  // and all of them once under kClaimsInUseAnyDriver (dra_resource_claims_in_use).
  std::map<std::string, int64_t> ClaimsInUse() const ABSL_LOCKS_EXCLUDED(mu_);

  // Reconcile unprepares the claims of every pod the cache records that is not in
  // `active_pod_uids` (pods deleted while the host was away, or forced). The host calls it
  // periodically once it knows all its pods (upstream: every 60 s). Failures are logged and
  // returned (the first); the next round retries. Each pod's unprepare runs inside `around`
  // when it is set: a host that may admit a pod of the same UID again while a round runs
  // (driver calls can take their deadline each) holds that pod's lock there and skips the pod
  // if it is active again.
  using PodStepFn = std::function<absl::Status(const std::string& pod_uid,
                                               const std::function<absl::Status()>& unprepare)>;
  absl::Status Reconcile(const std::set<std::string>& active_pod_uids,
                         const PodStepFn& around = nullptr) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A claim in the cache: its checkpointed state, its entry of the checkpoint rendered once per
  // change (a write joins the rendered entries, so it does not render every claim again), and
  // whether its drivers prepared it since this manager started.
  class CachedClaim {
   public:
    explicit CachedClaim(ClaimInfoState state) : state_(std::move(state)) {}
    const ClaimInfoState& state() const { return state_; }
    // Every change goes through here, so the rendered entry is never stale.
    ClaimInfoState& mutable_state() {
      rendered_.reset();
      return state_;
    }
    // Rendered: the entry as the checkpoint holds it.
    std::shared_ptr<const RenderedEntry> Rendered(Layout layout);

    bool prepared = false;
    // A driver was asked to unprepare it since it was last prepared (an unprepare under way,
    // or one that failed): what the driver holds may be undone, so a prepare asks again.
    bool unprepare_asked = false;

   private:
    ClaimInfoState state_;
    std::shared_ptr<const RenderedEntry> rendered_;
  };
  // namespace, claim name.
  using ClaimKey = std::pair<std::string, std::string>;

  // Busy: the claims one prepare or unprepare works on, from the moment it looks at them until
  // it returns (its driver calls included); released when destroyed. Another one waits for them
  // before it looks at them (AwaitIdleLocked), so that a claim is never prepared and unprepared
  // at once: upstream's manager allows it, and a pod could then be handed a claim its driver had
  // just undone, or lose it from the cache to the other pod's unprepare.
  class Busy {
   public:
    explicit Busy(Manager& manager) : manager_(manager) {}
    ~Busy();
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;

   private:
    friend class Manager;
    Manager& manager_;
    std::vector<ClaimKey> keys_;
  };
  void AwaitIdleLocked(const std::vector<ClaimKey>& keys) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // MarkBusyLocked: `key` is held by `busy` until it is destroyed.
  void MarkBusyLocked(Busy& busy, const ClaimKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  explicit Manager(ManagerOptions options);

  // HealthSink: a driver's report updates the health cache and names the pods it concerns; the
  // end of a stream that was open clears the driver's health (its devices read Unknown).
  void HealthReported(const std::string& driver_name,
                      const healthapi::NodeWatchResourcesResponse& response) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void HealthStreamEnded(const std::string& driver_name, const HealthStreamEnd& end) override
      ABSL_LOCKS_EXCLUDED(mu_);
  // HealthChanged tells the host of the pods that hold `devices` of `driver_name`.
  void HealthChanged(const std::string& driver_name, const std::vector<DeviceHealth>& devices)
      ABSL_LOCKS_EXCLUDED(mu_);

  absl::Status Prepare(const Pod& pod, FinalWrite final_write) ABSL_LOCKS_EXCLUDED(mu_);
  // UnprepareAll is UnprepareResources, which times it.
  absl::Status UnprepareAll(const Pod& pod) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Unprepare(const std::string& pod_uid, const std::string& namespace_name,
                         const std::vector<std::string>& claim_names) ABSL_LOCKS_EXCLUDED(mu_);
  // PodClaims: the pod's claims, and with the DRAExtendedResource gate the claim of its
  // extended resources (by name).
  std::vector<PodResourceClaim> PodClaims(const Pod& pod) const;
  // ExtendedResourceClaim: with the gate, the pod's extended-resource claim, if it has one.
  const PodExtendedResourceClaimStatus* ExtendedResourceClaim(const Pod& pod) const;
  // ContainerClaimNames: the claims `container` uses, each with the requests it names ("" for
  // the whole claim), in the order of the pod's claims (spec.resourceClaims only).
  static absl::StatusOr<std::vector<std::pair<std::string, std::vector<std::string>>>>
  ContainerClaimNames(const Pod& pod, const Container& container);
  // Persist makes the cache durable as of at least `version` (the version_ of the caller's
  // change), as a group commit: a caller that arrives while a write runs waits for it, and the
  // next write covers every change made before it took its snapshot, so concurrent callers share
  // writes. Called without the cache lock; on a failed write the next caller writes again.
  absl::Status Persist(uint64_t version) ABSL_LOCKS_EXCLUDED(mu_, write_mu_);
  // Write writes the checkpoint if it has changes not yet written, renamed before `files`.
  absl::Status Write(std::vector<FileStore::PlacedBytes> files)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_) ABSL_LOCKS_EXCLUDED(mu_);

  const ManagerOptions options_;
  const FileStore store_;
  // Before drivers_, whose health streams report into it.
  HealthCache health_;
  // Before drivers_, which tells it when drivers come and go.
  std::unique_ptr<SliceCleanup> slice_cleanup_;
  DriverRegistry drivers_;
  // Serialises checkpoint writes; taken before mu_.
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  uint64_t durable_version_ ABSL_GUARDED_BY(write_mu_) = 0;
  mutable absl::Mutex mu_;
  std::map<ClaimKey, CachedClaim> cache_ ABSL_GUARDED_BY(mu_);
  // Counts the changes of cache_ (each must become durable; ClaimsRevision reports it).
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  // The claims held by a Busy.
  std::set<ClaimKey> busy_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::dra
