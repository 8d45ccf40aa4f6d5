// ClusterClaimSource: the ClaimSource of a node in a cluster, as the kubelet's: each
// ResourceClaim is read from the API server when the DRA manager prepares it (what the
// scheduler allocated and reserved is there, not in the pod's manifest). The claim is read with
// the same reader as the ResourceClaim documents that come with pods (claim_manifest.h), so the
// two paths see the same fields and give the same errors; the configurations' opaque parameters
// (an object) are kept as the server sent them, whatever their numbers and nesting.
//
// Thread-safety: as the client's; GetClaim blocks for at most the client's request timeout.
#pragma once

#include <string>

#include "dra/claim.h"
#include "kubeclient/client.h"

namespace devmgr::node {

class ClusterClaimSource final : public dra::ClaimSource {
 public:
  // `client` is not owned and must outlive the source.
  explicit ClusterClaimSource(kubeclient::Client& client) : client_(client) {}

  // NotFound with the server's text ("resourceclaims.resource.k8s.io \"NAME\" not found") when
  // there is no such claim; the client's errors otherwise; InvalidArgument naming the field for
  // a claim that cannot be read.
  absl::StatusOr<dra::ResourceClaim> GetClaim(const std::string& namespace_name,
                                              const std::string& name) override;

 private:
  kubeclient::Client& client_;
};

}  // namespace devmgr::node
