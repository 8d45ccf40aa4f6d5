#include "dra/claim_name.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
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

absl::Status IsForPod(const Pod& pod, const ResourceClaim& claim) {
  // As upstream, another namespace's claim is not the pod's whoever owns it.
  const bool owned = claim.namespace_name == pod.namespace_name &&
                     std::any_of(claim.owner_references.begin(), claim.owner_references.end(),
                                 [&](const OwnerReference& owner) {
                                   return owner.controller && owner.uid == pod.uid;
                                 });
  if (owned) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "ResourceClaim ", claim.namespace_name, "/", claim.name, " was not created for pod ",
      pod.namespace_name, "/", pod.name, " (pod is not owner)"));
}

bool IsReservedForPod(const Pod& pod, const ResourceClaim& claim) {
  return std::any_of(
      claim.reserved_for.begin(), claim.reserved_for.end(),
      [&](const ResourceClaimConsumerReference& consumer) { return consumer.uid == pod.uid; });
}

}  // namespace devmgr::dra
