#include "dra/claim_name.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/go_quote.h"

namespace devmgr::dra {

absl::StatusOr<ResolvedClaimName> ClaimName(const Pod& pod, const PodResourceClaim& pod_claim) {
  if (pod_claim.resource_claim_name.has_value())
    return ResolvedClaimName{pod_claim.resource_claim_name, false};
  if (pod_claim.resource_claim_template_name.has_value()) {
    for (const PodResourceClaimStatus& status : pod.resource_claim_statuses) {
      if (status.name == pod_claim.name) return ResolvedClaimName{status.resource_claim_name, true};
    }
    return absl::FailedPreconditionError(absl::StrCat("pod \"", pod.namespace_name, "/", pod.name,
                                                      "\": ResourceClaim not created yet"));
  }
  return absl::InvalidArgumentError(absl::StrCat("pod \"", pod.namespace_name, "/", pod.name,
                                                 "\", spec.resourceClaim ", GoQuote(pod_claim.name),
                                                 ": none of the supported fields are set"));
}

namespace {

// The Workload API's group: a PodGroup's owner references and consumer references name it.
constexpr absl::string_view kSchedulingGroup = "scheduling.k8s.io";

// The claim's controlling owner (the first owner reference marked controller), as
// metav1.GetControllerOf; null when none is.
const OwnerReference* ControllerOf(const ResourceClaim& claim) {
  const auto controller =
      std::find_if(claim.owner_references.begin(), claim.owner_references.end(),
                   [](const OwnerReference& owner) { return owner.controller; });
  return controller == claim.owner_references.end() ? nullptr : &*controller;
}

// The claim's controlling owner is the pod's PodGroup, known to the pod only by its name. The
// API version's version part may change; its group may not.
bool IsForPodGroupOfPod(const Pod& pod, const OwnerReference* controller) {
  return pod.pod_group_name.has_value() && controller != nullptr &&
         controller->name == *pod.pod_group_name && controller->kind == "PodGroup" &&
         absl::StartsWith(controller->api_version, absl::StrCat(kSchedulingGroup, "/"));
}

}  // namespace

absl::Status IsForPod(const Pod& pod, const ResourceClaim& claim, bool accept_pod_group_owner) {
  const std::string claim_ref = absl::StrCat(claim.namespace_name, "/", claim.name);
  const std::string pod_ref = absl::StrCat(pod.namespace_name, "/", pod.name);
  // Another namespace's claim is not the pod's, whoever owns it.
  if (claim.namespace_name != pod.namespace_name) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ResourceClaim ", claim_ref, " is not in the same namespace as Pod ", pod_ref));
  }
  const OwnerReference* controller = ControllerOf(claim);
  if (controller != nullptr && controller->uid == pod.uid) return absl::OkStatus();
  // A pod without a PodGroup gets the text without the gate (upstream's text names the group,
  // and fails on a pod without one).
  if (!accept_pod_group_owner || !pod.pod_group_name.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ResourceClaim ", claim_ref, " was not created for Pod ", pod_ref, " (Pod is not owner)"));
  }
  if (IsForPodGroupOfPod(pod, controller)) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("ResourceClaim ", claim_ref, " was not created for Pod ", pod_ref,
                   " (neither Pod nor PodGroup ", *pod.pod_group_name, " is the owner)"));
}

bool IsReservedForPod(const Pod& pod, const ResourceClaim& claim,
                      bool accept_pod_group_reservation) {
  return std::any_of(claim.reserved_for.begin(), claim.reserved_for.end(),
                     [&](const ResourceClaimConsumerReference& consumer) {
                       if (consumer.uid == pod.uid) return true;
                       return accept_pod_group_reservation &&
                              consumer.api_group == kSchedulingGroup &&
                              consumer.resource == "podgroups" && pod.pod_group_name.has_value() &&
                              consumer.name == *pod.pod_group_name;
                     });
}

}  // namespace devmgr::dra
