#include "node/pod_admission.h"

#include "absl/strings/str_cat.h"
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

absl::StatusOr<std::vector<ContainerOptions>> PodAdmission::Admit(const Pod& pod) {
  PodLock pod_lock(*this, pod.uid);
  if (std::optional<RegisteredPod> existing = registry_.Find(pod.uid); existing.has_value()) {
    if (existing->recovered || existing->pod != pod) {
      return absl::AlreadyExistsError(absl::StrCat(
          "pod ", pod.uid, " is already admitted with other containers; remove it first"));
    }
    return CollectOptions(pod);
  }
  if (absl::Status begun = registry_.BeginAdmission(pod); !begun.ok()) return begun;

  absl::string_view reason;
  absl::StatusOr<std::vector<ContainerOptions>> options = AllocateAll(pod, reason);
  absl::Status status = options.status();
  if (status.ok()) {
    status = registry_.CommitAdmission(pod.uid);
    reason = kRefusedRecordWrite;
  }
  if (!status.ok()) {
    topology_.Forget(pod.uid);
    if (absl::Status released = manager_.ReleasePod(pod.uid); !released.ok()) {
      DEVMGR_LOG(logger_, err, "Failed to release a refused pod's devices durably", "podUID",
                 pod.uid, "err", released);
    }
    registry_.AbortAdmission(pod.uid);
    DEVMGR_LOG(logger_, info, "Pod admission refused", "pod",
               absl::StrCat(pod.namespace_name, "/", pod.name), "podUID", pod.uid, "reason",
               reason.empty() ? absl::string_view("allocation") : reason, "err", status);
    // The device manager counts its own refusals; only the daemon's steps are told here.
    if (!reason.empty() && on_refusal_) on_refusal_(reason);
    return status;
  }
  DEVMGR_LOG(logger_, info, "Pod admitted", "pod", absl::StrCat(pod.namespace_name, "/", pod.name),
             "podUID", pod.uid);
  if (notifier_ != nullptr) notifier_->PodUpdated(PodRegistry::ToPodResources(pod));
  return options;
}

absl::StatusOr<std::vector<ContainerOptions>> PodAdmission::AllocateAll(const Pod& pod,
                                                                        absl::string_view& reason) {
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const Container& container : *list) {
      if (topology_.kind() != topologymanager::TopologyPolicyKind::kNone) {
        absl::Status admitted =
            topology_.Admit(pod.uid, container.name, manager_.GetTopologyHints(pod, container));
        if (!admitted.ok()) {
          reason = kRefusedTopologyAffinity;
          return admitted;
        }
      }
      if (absl::Status allocated = manager_.Allocate(pod, container); !allocated.ok()) {
        return allocated;
      }
    }
  }
  reason = kRefusedPreStart;
  return CollectOptions(pod);
}

absl::StatusOr<std::vector<ContainerOptions>> PodAdmission::CollectOptions(const Pod& pod) {
  std::vector<ContainerOptions> all;
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const Container& container : *list) {
      absl::StatusOr<devicemanager::RunContainerOptions> options =
          manager_.GetDeviceRunContainerOptions(pod, container);
      if (!options.ok()) return options.status();
      all.push_back({container.name, *std::move(options)});
    }
  }
  return all;
}

absl::Status PodAdmission::Remove(const std::string& pod_uid) {
  PodLock pod_lock(*this, pod_uid);
  if (!registry_.Find(pod_uid).has_value()) {
    return absl::NotFoundError(absl::StrCat("pod ", pod_uid, " not found"));
  }
  // Devices first: a crash between the two steps leaves a pod that holds nothing (removing it
  // again finishes), never one that comes back holding devices.
  if (absl::Status released = manager_.ReleasePod(pod_uid); !released.ok()) return released;
  if (absl::Status removed = registry_.Remove(pod_uid); !removed.ok()) return removed;
  topology_.Forget(pod_uid);
  DEVMGR_LOG(logger_, info, "Pod removed", "podUID", pod_uid);
  if (notifier_ != nullptr) notifier_->PodRemoved(pod_uid);
  return absl::OkStatus();
}

absl::StatusOr<devicemanager::RunContainerOptions> PodAdmission::RunOptions(
    const std::string& pod_uid, const std::string& container_name) {
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
  return manager_.GetDeviceRunContainerOptions(registered->pod, *container);
}

}  // namespace devmgr::node
