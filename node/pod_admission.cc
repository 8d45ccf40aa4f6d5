#include "node/pod_admission.h"

#include <algorithm>
#include <iterator>
#include <set>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/damaged_copy.h"
#include "devicemanager/metrics.h"
#include "node/admission_refusals.h"

namespace devmgr::node {

using devicemanager::Container;
using devicemanager::Pod;

PodAdmission::PodLock::PodLock(PodAdmission& owner, std::string uid)
    : owner_(owner), uid_(std::move(uid)) {
  absl::MutexLock lock(&owner_.locks_mu_);
  while (owner_.busy_.contains(uid_)) owner_.released_.Wait(&owner_.locks_mu_);
  owner_.busy_.insert(uid_);
}

PodAdmission::PodLock::~PodLock() {
  absl::MutexLock lock(&owner_.locks_mu_);
  owner_.busy_.erase(uid_);
  owner_.released_.SignalAll();
}

PodAdmission::PodAdmission(devicemanager::Manager& manager, PodRegistry& registry,
                           topologymanager::TopologyPolicy& topology, LoggerPtr logger)
    : manager_(manager), registry_(registry), topology_(topology), logger_(std::move(logger)) {}

absl::StatusOr<std::vector<ContainerOptions>> PodAdmission::Admit(const Pod& pod,
                                                                  const PodClaims& given) {
  std::optional<PodClaims> without_extended;
  if (!dra_extended_resource_ && given.pod.extended_resource_claim_status.has_value()) {
    without_extended = given;
    without_extended->pod.extended_resource_claim_status.reset();
  }
  const PodClaims& claims = without_extended.has_value() ? *without_extended : given;
  if (absl::Status running = CheckRunning(); !running.ok()) {
    Refused(pod, devicemanager::kRefusedNotRunning, running);
    return running;
  }
  PodLock pod_lock(*this, pod.uid);
  const std::optional<dra::Pod> wanted =
      claims.empty() ? std::nullopt : std::optional<dra::Pod>(claims.pod);
  // The refusals before the pod's admission begins: nothing to undo.
  const auto refuse = [&](absl::string_view reason, absl::Status status) {
    Refused(pod, reason, status);
    return status;
  };
  if (std::optional<RegisteredPod> existing = registry_.Find(pod.uid); existing.has_value()) {
    const std::optional<dra::Pod> stored = StoredClaims(pod.uid);
    if (!stored.has_value()) {
      if (absl::Status lost = LostClaims(pod.uid); !lost.ok()) return refuse(kRefusedClaims, lost);
    }
    if (existing->recovered || existing->pod != pod || stored != wanted) {
      // What differs, so that the one to change is found.
      const std::string differs =
          existing->recovered ? "was recovered from the checkpoint, whose pods have no spec"
          : existing->pod.name != pod.name || existing->pod.namespace_name != pod.namespace_name
              ? absl::StrCat("is already admitted as ", existing->pod.namespace_name, "/",
                             existing->pod.name)
          : existing->pod != pod ? "is already admitted with other containers"
                                 : "is already admitted with other ResourceClaims";
      return refuse(kRefusedAlreadyAdmitted,
                    absl::AlreadyExistsError(
                        absl::StrCat("pod ", pod.uid, " ", differs, "; remove it first")));
    }
    if (wanted.has_value()) {
      if (absl::Status prepared = PreparedSinceStart(*wanted); !prepared.ok()) {
        return refuse(kRefusedClaims, prepared);
      }
    }
    return CollectOptions(pod, wanted.has_value() ? &*wanted : nullptr);
  }
  if (wanted.has_value() && (dra_ == nullptr || claims_ == nullptr)) {
    return refuse(
        kRefusedClaims,
        absl::FailedPreconditionError(absl::StrCat(
            "pod ", pod.uid, " uses ResourceClaims, and this node serves no DRA drivers")));
  }
  if (!wanted.has_value() && dra_ != nullptr && dra_->PodMightNeedToUnprepareResources(pod.uid)) {
    // Otherwise the pod would be taken for one whose claims a damaged claim record took.
    return refuse(kRefusedClaims,
                  absl::UnavailableError(absl::StrCat(
                      "pod ", pod.uid,
                      ": the ResourceClaims of its earlier admission are not unprepared yet; try "
                      "again once they are")));
  }
  if (registry_.IsLeaving(pod.uid)) {
    // Refused before (or cut short by a restart), and its devices' release failed then.
    if (absl::Status released = manager_.ReleasePod(pod.uid); !released.ok()) {
      return refuse(kRefusedRecordWrite, absl::UnavailableError(absl::StrCat(
                                             "pod ", pod.uid,
                                             ": the devices of its earlier admission could not be "
                                             "released: ",
                                             released.message())));
    }
    registry_.Released(pod.uid);
  }
  if (absl::Status begun = registry_.BeginAdmission(pod); !begun.ok()) {
    return refuse(absl::IsAlreadyExists(begun) ? kRefusedAlreadyAdmitted : kRefusedRecordWrite,
                  begun);
  }

  absl::string_view reason;
  absl::StatusOr<std::vector<ContainerOptions>> options = AllocateAll(pod, claims, reason);
  absl::Status status = options.status();
  if (status.ok()) {
    // The record with the pod and the checkpoint with its devices, in one flush (the manager's
    // store is a RecordingCheckpointStore, whose writes taken after the pod was staged record
    // it admitted). A pod that holds no devices changed nothing in the checkpoint:
    // CommitAdmission writes its record alone. Either write carries the state of the pod's
    // prepared claims (SetDra).
    const bool holds_devices = HoldsDevices(pod);
    registry_.StageAdmission(pod.uid, holds_devices);
    reason = kRefusedRecordWrite;
    if (holds_devices) status = manager_.SyncCheckpoint();
    if (status.ok()) status = registry_.CommitAdmission(pod.uid);
  }
  if (!status.ok()) {
    if (wanted.has_value()) ForgetClaims(*wanted);
    topology_.Forget(pod.uid);
    // The record keeps the pod in flight until its devices' release is durable: no write that
    // comes between finds the checkpoint with them and the record without the pod.
    registry_.AbortAdmission(pod.uid);
    if (absl::Status released = manager_.ReleasePod(pod.uid); released.ok()) {
      registry_.Released(pod.uid);
    } else {
      DEVMGR_LOG(logger_, err, "Failed to release a refused pod's devices durably", "podUID",
                 pod.uid, "err", released);
    }
    if (absl::Status flushed = registry_.FlushRecord(); !flushed.ok()) {
      DEVMGR_LOG(logger_, err, "Failed to write the pod record without a refused pod", "podUID",
                 pod.uid, "err", flushed);
    }
    Refused(pod, reason, status);
    return status;
  }
  DEVMGR_LOG(logger_, info, "Pod admitted", "pod", absl::StrCat(pod.namespace_name, "/", pod.name),
             "podUID", pod.uid);
  if (notifier_ != nullptr) notifier_->PodUpdated(PodRegistry::ToPodResources(pod));
  return options;
}

absl::Status PodAdmission::CheckRunning() const {
  return stopped_ ? absl::FailedPreconditionError("the node is stopped") : absl::OkStatus();
}

void PodAdmission::Refused(const Pod& pod, absl::string_view reason, const absl::Status& status) {
  DEVMGR_LOG(logger_, info, "Pod admission refused", "pod",
             absl::StrCat(pod.namespace_name, "/", pod.name), "podUID", pod.uid, "reason",
             reason.empty() ? absl::string_view("allocation") : reason, "err", status);
  // The device manager counts its own refusals; only the daemon's steps are told here.
  if (!reason.empty() && on_refusal_) on_refusal_(reason);
}

bool PodAdmission::HoldsDevices(const Pod& pod) const {
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const Container& container : *list) {
      if (!manager_.GetDevices(pod.uid, container.name).empty()) return true;
    }
  }
  return false;
}

std::vector<std::string> PodAdmission::NonDevicePluginResources(const Pod& pod) const {
  std::set<std::string> asked;
  std::set<std::string> held;
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const Container& container : *list) {
      for (const auto& request : container.devices) {
        const bool to_dra = dra_extended_resource_ &&
                            absl::c_any_of(pod.dra_resource_mappings,
                                           [&](const devicemanager::DraResourceMapping& mapping) {
                                             return mapping.container_name == container.name &&
                                                    mapping.resource_name == request.first;
                                           });
        if (request.second > 0 && !to_dra) asked.insert(request.first);
      }
      // A resource held by any container (an init container's devices reused by the next
      // ones) was a device-plugin resource.
      for (const auto& [resource, devices] : manager_.GetDevices(pod.uid, container.name)) {
        held.insert(resource);
      }
    }
  }
  std::vector<std::string> skipped;
  std::set_difference(asked.begin(), asked.end(), held.begin(), held.end(),
                      std::back_inserter(skipped));
  return skipped;
}

absl::StatusOr<std::vector<ContainerOptions>> PodAdmission::AllocateAll(const Pod& pod,
                                                                        const PodClaims& claims,
                                                                        absl::string_view& reason) {
  if (absl::Status allocated = AllocateDevices(pod, reason); !allocated.ok()) return allocated;
  if (!claims.empty()) {
    reason = kRefusedClaims;
    if (absl::Status stored = AllocateAndStore(claims); !stored.ok()) return stored;
    // The prepared state becomes durable with the pod's record (SetDra).
    if (absl::Status prepared = dra_->PrepareResources(claims.pod, dra::FinalWrite::kCarried);
        !prepared.ok()) {
      return prepared;
    }
    // The claims rode on the DRA manager's first write when it is the claim store's carrier
    // (then this writes nothing); they must be durable before the pod is recorded.
    if (absl::Status stored = claims_->Flush(); !stored.ok()) return stored;
  }
  reason = kRefusedPreStart;
  return CollectOptions(pod, claims.empty() ? nullptr : &claims.pod);
}

absl::Status PodAdmission::AllocateDevices(const Pod& pod, absl::string_view& reason) {
  const absl::Time start = absl::Now();
  absl::Status status = AlignAndAllocate(pod, reason);
  if (topology_metrics_ != nullptr) {
    // Under policy none upstream's topology manager only allocates, and counts no error.
    const bool aligned = topology_.kind() != topologymanager::TopologyPolicyKind::kNone;
    topology_metrics_->AdmissionDone(aligned && !status.ok(), absl::Now() - start);
  }
  return status;
}

absl::Status PodAdmission::AlignAndAllocate(const Pod& pod, absl::string_view& reason) {
  using topologymanager::TopologyScope;
  const bool policy = topology_.kind() != topologymanager::TopologyPolicyKind::kNone;
  const bool pod_scope = topology_.scope() == TopologyScope::kPod;
  if (policy && pod_scope) {
    std::vector<std::string> names;
    for (const auto* list : {&pod.init_containers, &pod.containers}) {
      for (const Container& container : *list) names.push_back(container.name);
    }
    if (absl::Status admitted = topology_.Admit(pod.uid, names, manager_.GetPodTopologyHints(pod));
        !admitted.ok()) {
      reason = kRefusedTopologyAffinity;
      CountAlignment(TopologyScope::kPod, false);
      return admitted;
    }
  }
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const Container& container : *list) {
      if (policy && !pod_scope) {
        absl::Status admitted =
            topology_.Admit(pod.uid, {container.name}, manager_.GetTopologyHints(pod, container));
        if (!admitted.ok()) {
          reason = kRefusedTopologyAffinity;
          CountAlignment(TopologyScope::kContainer, false);
          return admitted;
        }
      }
      if (absl::Status allocated = manager_.Allocate(pod, container); !allocated.ok()) {
        return allocated;
      }
      if (!pod_scope) CountAlignment(TopologyScope::kContainer, true);
    }
  }
  if (pod_scope) CountAlignment(TopologyScope::kPod, true);
  return absl::OkStatus();
}

void PodAdmission::CountAlignment(topologymanager::TopologyScope scope, bool aligned) {
  // Upstream counts alignments only under the policy that guarantees them.
  if (topology_.kind() == topologymanager::TopologyPolicyKind::kSingleNumaNode &&
      topology_metrics_ != nullptr) {
    topology_metrics_->AlignmentDone(scope, aligned);
  }
}

absl::Status PodAdmission::AllocateAndStore(const PodClaims& claims) {
  if (allocator_ == nullptr || claims.unallocated.empty()) return claims_->Add(claims);
  absl::MutexLock lock(&allocation_mu_);
  PodClaims allocated = claims;
  absl::StatusOr<std::vector<dra::ResourceClaim>> held = HeldClaims(claims);
  if (!held.ok()) return held.status();
  if (absl::Status done = allocator_->Allocate(allocated, *held); !done.ok()) {
    return done;
  }
  return claims_->Add(allocated);
}

absl::StatusOr<std::vector<dra::ResourceClaim>> PodAdmission::HeldClaims(
    const PodClaims& claims) const {
  std::vector<dra::ResourceClaim> held = claims_->Claims();
  std::set<std::pair<std::string, std::string>> stored;
  for (const dra::ResourceClaim& claim : held) stored.emplace(claim.namespace_name, claim.name);
  std::set<std::pair<std::string, std::string>> brought_unallocated;
  for (const kubeapi::ResourceClaim& claim : claims.unallocated) {
    brought_unallocated.emplace(claim.metadata.namespace_name, claim.metadata.name);
  }
  for (const dra::ClaimSnapshot& snapshot : dra_->Claims()) {
    const dra::ClaimInfoState& state = snapshot.state;
    if (stored.contains({state.namespace_name, state.claim_name})) continue;
    if (brought_unallocated.contains({state.namespace_name, state.claim_name})) {
      const std::set<std::string> pods = state.pod_uids.value_or(std::set<std::string>{});
      const bool admitted = absl::c_any_of(
          pods, [this](const std::string& uid) { return registry_.Find(uid).has_value(); });
      if (!admitted) {
        // A refused pod's, whose unprepare failed: the sync unprepares it.
        return absl::UnavailableError(absl::StrCat(
            "ResourceClaim ", state.namespace_name, "/", state.claim_name,
            " came without an allocation, and is not unprepared yet for pods that are gone; try "
            "again once it is"));
      }
      return absl::FailedPreconditionError(absl::StrCat(
          "ResourceClaim ", state.namespace_name, "/", state.claim_name,
          " came without an allocation, and is prepared for pods the claim record does not name: "
          "its allocation is not known; remove those pods first"));
    }
    if (!state.driver_state.has_value()) continue;
    dra::ResourceClaim& claim = held.emplace_back();
    claim.namespace_name = state.namespace_name;
    claim.name = state.claim_name;
    std::vector<dra::DeviceRequestAllocationResult>& results = claim.allocation.emplace();
    for (const auto& [driver, prepared] : *state.driver_state) {
      for (const dra::CheckpointDevice& device :
           prepared.devices.value_or(std::vector<dra::CheckpointDevice>{})) {
        // How much of the device's capacity the claim took is not in the state: the whole
        // device is held (no share), once per request it served.
        const std::vector<std::string> requests =
            device.request_names.value_or(std::vector<std::string>{});
        for (const std::string& request :
             requests.empty() ? std::vector<std::string>{""} : requests) {
          results.push_back({.request = request,
                             .driver = driver,
                             .pool = device.pool_name,
                             .device = device.device_name,
                             .share_id = std::nullopt});
        }
      }
    }
  }
  return held;
}

void PodAdmission::ForgetClaims(const dra::Pod& claims) {
  // A driver that cannot unprepare now leaves the claim recorded for the pod in the DRA
  // manager's checkpoint; SyncClaims unprepares it later, since the pod is not active.
  if (absl::Status unprepared = dra_->UnprepareResources(claims); !unprepared.ok()) {
    DEVMGR_LOG(logger_, warn, "Claims of a refused pod are unprepared later", "podUID", claims.uid,
               "err", unprepared);
  }
  // Written at once: a refused admission leaves no trace.
  claims_->Remove(claims.uid);
  if (absl::Status written = claims_->Flush(); !written.ok()) {
    DEVMGR_LOG(logger_, err, "Failed to forget a refused pod's claims durably", "podUID",
               claims.uid, "err", written);
  }
}

absl::Status PodAdmission::LostClaims(const std::string& pod_uid) const {
  if (claims_ == nullptr || dra_ == nullptr || claims_->FindPod(pod_uid).has_value() ||
      !dra_->PodMightNeedToUnprepareResources(pod_uid)) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "pod ", pod_uid,
      " holds ResourceClaims that the DRA manager's state names and the claim record does not (a "
      "claim record found damaged is kept aside with a \"",
      kDamagedCopySuffix,
      "\" suffix), so which of its containers use them is unknown; remove the pod and admit it "
      "again"));
}

std::optional<dra::Pod> PodAdmission::StoredClaims(const std::string& pod_uid) const {
  if (claims_ == nullptr) return std::nullopt;
  return claims_->FindPod(pod_uid);
}

absl::StatusOr<std::vector<ContainerOptions>> PodAdmission::CollectOptions(const Pod& pod,
                                                                           const dra::Pod* claims) {
  std::vector<ContainerOptions> all;
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const Container& container : *list) {
      absl::StatusOr<devicemanager::RunContainerOptions> options =
          ContainerRunOptions(pod, container, claims);
      if (!options.ok()) return options.status();
      all.push_back({container.name, *std::move(options)});
    }
  }
  return all;
}

absl::StatusOr<devicemanager::RunContainerOptions> PodAdmission::ContainerRunOptions(
    const Pod& pod, const Container& container, const dra::Pod* claims) {
  absl::StatusOr<devicemanager::RunContainerOptions> options =
      manager_.GetDeviceRunContainerOptions(pod, container);
  if (!options.ok() || claims == nullptr) return options;
  for (const auto* list : {&claims->init_containers, &claims->containers}) {
    for (const dra::Container& uses : *list) {
      if (uses.name != container.name) continue;
      absl::StatusOr<std::vector<std::string>> cdi = dra_->GetResources(*claims, uses);
      if (!cdi.ok()) return cdi.status();
      options->cdi_devices.insert(options->cdi_devices.end(), cdi->begin(), cdi->end());
    }
  }
  return options;
}

absl::Status PodAdmission::Remove(const std::string& pod_uid) {
  if (absl::Status running = CheckRunning(); !running.ok()) return running;
  PodLock pod_lock(*this, pod_uid);
  if (!registry_.Find(pod_uid).has_value()) {
    return absl::NotFoundError(absl::StrCat("pod ", pod_uid, " not found"));
  }
  // Claims first: a crash after their unprepare leaves a pod that holds none (removing it
  // again finishes).
  const std::optional<dra::Pod> claims = StoredClaims(pod_uid);
  if (claims.has_value()) {
    if (absl::Status unprepared = dra_->UnprepareResources(*claims); !unprepared.ok()) {
      return unprepared;
    }
  }
  // The record with the pod in flight rides on the checkpoint write that releases its devices:
  // one flush. A crash after any write from here on forgets the pod and frees its devices.
  if (absl::Status begun = registry_.BeginRemoval(pod_uid); !begun.ok()) return begun;
  if (absl::Status released = manager_.ReleasePod(pod_uid); !released.ok()) {
    // Released in memory, not durably: its devices may go to the next pod, so it cannot stay
    // admitted. It leaves as a refused pod does; its release is tried again before its UID is
    // admitted again, and at the next start.
    registry_.AbandonRemoval(pod_uid);
    Forget(pod_uid, claims.has_value());
    return absl::Status(released.code(),
                        absl::StrCat("pod ", pod_uid,
                                     " removed, but the release of its devices is not durable "
                                     "yet: ",
                                     released.message()));
  }
  if (absl::Status finished = registry_.FinishRemoval(pod_uid); !finished.ok()) {
    // Its claims, unprepared, are prepared again while it stays (SyncClaims, or its next run
    // options: dra::Manager::Prepared no longer holds).
    registry_.AbortRemoval(pod_uid);
    return finished;
  }
  Forget(pod_uid, claims.has_value());
  DEVMGR_LOG(logger_, info, "Pod removed", "podUID", pod_uid);
  return absl::OkStatus();
}

void PodAdmission::Forget(const std::string& pod_uid, bool had_claims) {
  if (had_claims) {
    // The pod is gone (in flight in the record): its claims leave the claim record with the
    // next write, and a start before that forgets them (Retain). No flush of its own.
    claims_->Remove(pod_uid);
    absl::MutexLock lock(&sync_mu_);
    sync_errors_.erase(pod_uid);
  }
  topology_.Forget(pod_uid);
  if (notifier_ != nullptr) notifier_->PodRemoved(pod_uid);
}

absl::StatusOr<devicemanager::RunContainerOptions> PodAdmission::RunOptions(
    const std::string& pod_uid, const std::string& container_name) {
  if (absl::Status running = CheckRunning(); !running.ok()) return running;
  PodLock pod_lock(*this, pod_uid);
  std::optional<RegisteredPod> registered = registry_.Find(pod_uid);
  if (!registered.has_value()) {
    return absl::NotFoundError(absl::StrCat("pod ", pod_uid, " not found"));
  }
  const Container* container = registered->pod.FindContainer(container_name);
  if (container == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("container ", container_name, " not found in pod ", pod_uid));
  }
  const std::optional<dra::Pod> claims = StoredClaims(pod_uid);
  if (claims.has_value()) {
    if (absl::Status prepared = PreparedSinceStart(*claims); !prepared.ok()) return prepared;
  } else if (absl::Status lost = LostClaims(pod_uid); !lost.ok()) {
    return lost;
  }
  return ContainerRunOptions(registered->pod, *container, claims.has_value() ? &*claims : nullptr);
}

absl::Status PodAdmission::PreparedSinceStart(const dra::Pod& claims) {
  if (dra_->Prepared(claims)) return absl::OkStatus();
  if (absl::Status prepared = dra_->PrepareResources(claims); !prepared.ok()) return prepared;
  absl::MutexLock lock(&sync_mu_);
  if (sync_errors_.erase(claims.uid) > 0) {
    DEVMGR_LOG(logger_, info, "Pod claims prepared", "podUID", claims.uid);
  }
  return absl::OkStatus();
}

absl::Status PodAdmission::SyncClaims() {
  if (dra_ == nullptr || claims_ == nullptr) return absl::OkStatus();
  if (absl::Status running = CheckRunning(); !running.ok()) return running;
  absl::Status first;
  for (const dra::Pod& listed : claims_->Pods()) {
    if (dra_->Prepared(listed)) continue;
    PodLock pod_lock(*this, listed.uid);
    // Admissions and removals in flight prepare and unprepare on their own.
    if (!registry_.Find(listed.uid).has_value()) continue;
    // The claims the pod has now: the pass may reach it long after the list was taken (each
    // driver call before may take its whole timeout), and the pod may have been removed and
    // admitted again under its UID since, with other claims or none.
    const std::optional<dra::Pod> claims = claims_->FindPod(listed.uid);
    if (!claims.has_value()) continue;
    absl::Status prepared = PreparedSinceStart(*claims);
    if (prepared.ok()) continue;
    absl::MutexLock lock(&sync_mu_);
    if (first.ok()) first = prepared;
    std::string& last = sync_errors_[claims->uid];
    if (last != prepared.message()) {
      last = std::string(prepared.message());
      DEVMGR_LOG(logger_, warn, "Pod claims are not prepared yet, will retry", "podUID",
                 claims->uid, "err", prepared);
    }
  }
  const std::vector<std::string> active = registry_.ActiveUids();
  const auto unless_admitted_again = [this](const std::string& uid,
                                            const std::function<absl::Status()>& unprepare) {
    PodLock pod_lock(*this, uid);
    // Admitted again under its UID since the list was taken: the claims are its own now.
    if (registry_.Find(uid).has_value()) return absl::OkStatus();
    return unprepare();
  };
  if (absl::Status reconciled =
          dra_->Reconcile({active.begin(), active.end()}, unless_admitted_again);
      !reconciled.ok() && first.ok()) {
    first = reconciled;
  }
  return first;
}

}  // namespace devmgr::node
