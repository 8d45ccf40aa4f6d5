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
// A container's "restartPolicy" ("Always": an init container that is a sidecar) and
// "requestedResources" appear only when set. "allocation" is null for a claim that is not
// allocated; a result's "shareID", "adminAccess": true and "consumedCapacity" (name ->
// quantity) appear only when set, and so does a claim's "allocationConfig"
// (status.allocation.devices.config:
// [{"source":"FromClaim","requests":[],"opaque":{"driver":"...","parameters":{...}}}]), so that
// a record written before it existed reads as it did.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
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

// The record in pieces, for a writer that keeps each element encoded and changes few at a time:
// EncodeRecordPod and EncodeRecordClaim give one element of "pods" and of "claims", and
// JoinClaimRecord the record holding these elements in this order (the bytes EncodeClaimRecord
// gives for the same contents).
std::string EncodeRecordPod(const dra::Pod& pod);
std::string EncodeRecordClaim(const dra::ResourceClaim& claim);
std::string JoinClaimRecord(absl::Span<const std::string* const> pods,
                            absl::Span<const std::string* const> claims);

// DecodeClaimRecord: DataLoss, saying what, for anything that is not a record of this version.
absl::StatusOr<ClaimRecord> DecodeClaimRecord(absl::string_view bytes);

}  // namespace devmgr::node
