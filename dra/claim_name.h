// Which ResourceClaim a pod claim names, and whether the pod may use it: upstream's helpers of
// k8s.io/dynamic-resource-allocation/resourceclaim (Name, IsForPod, IsReservedForPod), with
// their error texts.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dra/claim.h"

namespace devmgr::dra {

struct ResolvedClaimName {
  // The claim's name; std::nullopt when no claim was needed (a template produced none).
  std::optional<std::string> name;
  // The claim was generated from a template for this pod: its owner must be checked.
  bool must_check_owner = false;
};

// ClaimName resolves `pod_claim`: its resourceClaimName, or the name the pod's status gives the
// claim generated from its template. Errors: a template claim not created yet (FailedPrecondition:
// the pod waits), a pod claim with neither field (InvalidArgument).
absl::StatusOr<ResolvedClaimName> ClaimName(const Pod& pod, const PodResourceClaim& pod_claim);

// IsForPod: the claim is in the pod's namespace and its controlling owner is the pod or, with
// `accept_pod_group_owner` (feature gate DRAWorkloadResourceClaims), the pod's PodGroup (an
// owner of kind PodGroup in API group scheduling.k8s.io, any version, of that name).
absl::Status IsForPod(const Pod& pod, const ResourceClaim& claim, bool accept_pod_group_owner);

// IsReservedForPod: the claim's status.reservedFor holds the pod or, with
// `accept_pod_group_reservation` (the same gate), the pod's PodGroup (a consumer of resource
// "podgroups" in scheduling.k8s.io of that name: a pod does not know its group's UID).
bool IsReservedForPod(const Pod& pod, const ResourceClaim& claim,
                      bool accept_pod_group_reservation);

}  // namespace devmgr::dra
