// A claim as the DRA manager keeps it (upstream's ClaimInfo, pkg/kubelet/cm/dra/claiminfo.go):
// the state that goes into the checkpoint, built from the ResourceClaim, and the CDI devices a
// container gets from it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dra/checkpoint.h"
#include "dra/claim.h"

namespace devmgr::dra {

// NewClaimInfoState: the state of an allocated claim before any driver prepared it: no pods,
// and one driver state without devices per driver of its allocation results, with the node
// operations that every one of the driver's devices skips (the known ones; "*" counts as all).
// FailedPrecondition "not allocated" for a claim without an allocation, and
// "DRAOptionalNodeOperations feature gate is disabled on kubelet" for one whose results skip
// anything while `optional_node_operations` (the gate) is off.
absl::StatusOr<ClaimInfoState> NewClaimInfoState(const ResourceClaim& claim,
                                                 bool optional_node_operations);

// DriverSkips: the driver's devices in the claim all skip `operation`
// (kSkipNodePrepareResources or kSkipNodeUnprepareResources of common/node_operations.h), as its
// state records it.
bool DriverSkips(const DriverState& state, absl::string_view operation);

// DeviceServesRequest: the device is for `request` of its claim (a container's
// resources.claims[].request): it names no request (it serves all), names `request`, or names a
// subrequest of it ("<request>/<subrequest>", what a prioritized list chose, as a driver that
// does not strip the subrequest reports it). An empty `request` (the whole claim) takes every
// device.
bool DeviceServesRequest(const CheckpointDevice& device, absl::string_view request);

// CdiDevices: the CDI device IDs of the claim's prepared devices that serve `request` (a device
// that names no request serves all; an empty `request` takes every device; a device of a
// subrequest "req/sub" serves "req"), drivers in name order.
std::vector<std::string> CdiDevices(const ClaimInfoState& claim, absl::string_view request);

}  // namespace devmgr::dra
