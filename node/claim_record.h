// The durable record of the node's claim store (claim_store.h): the file `devmgr_pod_claims`
// in the node's root folder, beside dra_manager_state. A versioned JSON document holding every
// admitted pod's DRA half and the ResourceClaims that came with the pods, with the fields of
// the Kubernetes objects under their API names:
//   {"version":1,
//    "pods":[{"uid":"...","namespace":"default","name":"demo",
//             "resourceClaims":[{"name":"gpu","resourceClaimName":"demo-gpu"}],
//             "resourceClaimStatuses":[],
//             "initContainers":[],"containers":[{"name":"app","claims":[{"name":"gpu","request":""}]}]}],
//    "claims":[{"namespace":"default","name":"demo-gpu","uid":"...","ownerReferences":[],
//               "allocation":[{"request":"gpu","driver":"gpu.example.com","pool":"node",
//                              "device":"dev-0"}],
//               "reservedFor":[{"apiGroup":"","resource":"pods","name":"demo","uid":"..."}]}]}
// "allocation" is null for a claim that is not allocated; a result's "shareID",
// "adminAccess": true and "consumedCapacity" (name -> quantity) appear only when set.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dra/claim.h"

namespace devmgr::node {

// File name of the record in the root folder (a valid FileStore name).
inline constexpr char kClaimRecordName[] = "devmgr_pod_claims";

struct ClaimRecord {
  std::vector<dra::Pod> pods;
  std::vector<dra::ResourceClaim> claims;

  bool operator==(const ClaimRecord&) const = default;
};

std::string EncodeClaimRecord(const ClaimRecord& record);

// DecodeClaimRecord: DataLoss, saying what, for anything that is not a record of this version.
absl::StatusOr<ClaimRecord> DecodeClaimRecord(absl::string_view bytes);

}  // namespace devmgr::node
