// PodClaims: the Dynamic Resource Allocation half of a pod the node admits: which ResourceClaims
// the pod and its containers use (dra::Pod), and the ResourceClaim objects that came with it.
// On a node without an API server claims travel with their pod (a manifest's YAML stream holds
// the Pod and its ResourceClaims); the node keeps them in its claim store (claim_store.h).
#pragma once

#include <vector>

#include "dra/claim.h"
#include "kubeapi/resource_claim.h"

namespace devmgr::node {

struct PodClaims {
  dra::Pod pod;
  std::vector<dra::ResourceClaim> claims;
  // The whole documents of the claims that came without status.allocation (each also in
  // `claims`): what the node's allocator (claim_allocator.h) reads their requests from.
  std::vector<kubeapi::ResourceClaim> unallocated;

  // Whether the pod uses no claim at all (neither its own nor one the scheduler made for its
  // extended resources).
  bool empty() const {
    return pod.resource_claims.empty() && !pod.extended_resource_claim_status.has_value();
  }
  bool operator==(const PodClaims&) const = default;
};

}  // namespace devmgr::node
