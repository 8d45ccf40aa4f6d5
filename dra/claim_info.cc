#include "dra/claim_info.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace devmgr::dra {
namespace {

bool Serves(const CheckpointDevice& device, absl::string_view request) {
  if (request.empty() || !device.request_names.has_value() || device.request_names->empty()) {
    return true;
  }
  return std::any_of(device.request_names->begin(), device.request_names->end(),
                     [&](const std::string& name) {
                       return name == request || absl::StartsWith(name, absl::StrCat(request, "/"));
                     });
}

}  // namespace

absl::StatusOr<ClaimInfoState> NewClaimInfoState(const ResourceClaim& claim) {
  // Nothing the node can fix: the claim must be allocated (by the scheduler) first.
  if (!claim.allocation.has_value()) return absl::FailedPreconditionError("not allocated");
  ClaimInfoState state{claim.uid, claim.name, claim.namespace_name, std::set<std::string>{},
                       std::map<std::string, DriverState>{}};
  for (const DeviceRequestAllocationResult& result : *claim.allocation) {
    (*state.driver_state)[result.driver];
  }
  return state;
}

std::vector<std::string> CdiDevices(const ClaimInfoState& claim, absl::string_view request) {
  std::vector<std::string> ids;
  if (!claim.driver_state.has_value()) return ids;
  for (const auto& [driver, state] : *claim.driver_state) {
    if (!state.devices.has_value()) continue;
    for (const CheckpointDevice& device : *state.devices) {
      if (!Serves(device, request) || !device.cdi_device_ids.has_value()) continue;
      ids.insert(ids.end(), device.cdi_device_ids->begin(), device.cdi_device_ids->end());
    }
  }
  return ids;
}

}  // namespace devmgr::dra
