#include "dra/claim_info.h"

#include <algorithm>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/node_operations.h"

namespace devmgr::dra {
absl::StatusOr<ClaimInfoState> NewClaimInfoState(const ResourceClaim& claim,
                                                 bool optional_node_operations) {
  // Nothing the node can fix: the claim must be allocated (by the scheduler) first.
  if (!claim.allocation.has_value()) return absl::FailedPreconditionError("not allocated");
  ClaimInfoState state{claim.uid, claim.name, claim.namespace_name, std::set<std::string>{},
                       std::map<std::string, DriverState>{}};
  // Per driver, the known operations every one of its devices skips so far.
  std::map<std::string, std::vector<std::string>> skipped;
  for (const DeviceRequestAllocationResult& result : *claim.allocation) {
    if (!result.skip_node_operations.empty() && !optional_node_operations) {
      return absl::FailedPreconditionError(
          "DRAOptionalNodeOperations feature gate is disabled on kubelet");
    }
    std::vector<std::string> skips;
    for (const char* operation : {kSkipNodePrepareResources, kSkipNodeUnprepareResources}) {
      if (SkipsNodeOperation(result.skip_node_operations, operation)) skips.emplace_back(operation);
    }
    auto [it, first] = skipped.try_emplace(result.driver, skips);
    if (!first) {
      std::erase_if(it->second, [&](const std::string& operation) {
        return !SkipsNodeOperation(skips, operation);
      });
    }
    (*state.driver_state)[result.driver];
  }
  for (auto& [driver, operations] : skipped) {
    if (!operations.empty()) (*state.driver_state)[driver].skip_node_operations = operations;
  }
  return state;
}

bool DriverSkips(const DriverState& state, absl::string_view operation) {
  return state.skip_node_operations.has_value() &&
         SkipsNodeOperation(*state.skip_node_operations, operation);
}

bool DeviceServesRequest(const CheckpointDevice& device, absl::string_view request) {
  if (request.empty() || !device.request_names.has_value() || device.request_names->empty()) {
    return true;
  }
  return std::any_of(device.request_names->begin(), device.request_names->end(),
                     [&](const std::string& name) {
                       return name == request || absl::StartsWith(name, absl::StrCat(request, "/"));
                     });
}

std::vector<std::string> CdiDevices(const ClaimInfoState& claim, absl::string_view request) {
  std::vector<std::string> ids;
  if (!claim.driver_state.has_value()) return ids;
  for (const auto& [driver, state] : *claim.driver_state) {
    if (!state.devices.has_value()) continue;
    for (const CheckpointDevice& device : *state.devices) {
      if (!DeviceServesRequest(device, request) || !device.cdi_device_ids.has_value()) continue;
      ids.insert(ids.end(), device.cdi_device_ids->begin(), device.cdi_device_ids->end());
    }
  }
  return ids;
}

}  // namespace devmgr::dra
