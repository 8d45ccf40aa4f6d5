#include "dra/claim_health.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "dra/claim_info.h"
#include "dra/claim_name.h"

namespace devmgr::dra {
namespace {

// HealthServesRequest: DeviceServesRequest, and for a container that names a subrequest
// ("req/sub") a device its driver reported for the request ("req"; drivers strip the
// subrequest), as upstream's health match (BaseRequestRef) gives. CdiDevices does not take
// that last step (a device reported for "req" may be another subrequest's), though it takes a
// device reported for "req/sub" for "req", where upstream's CDI lookup matches exactly.
bool HealthServesRequest(const CheckpointDevice& device, absl::string_view request) {
  if (DeviceServesRequest(device, request)) return true;
  const size_t slash = request.find('/');
  return slash != absl::string_view::npos &&
         absl::c_linear_search(*device.request_names, request.substr(0, slash));
}

// FindClaimInfo: the state of the ResourceClaim `claim_name` in `namespace_name`, or null.
const ClaimInfoState* FindClaimInfo(const std::vector<ClaimInfoState>& claim_infos,
                                    absl::string_view namespace_name,
                                    absl::string_view claim_name) {
  for (const ClaimInfoState& info : claim_infos) {
    if (info.claim_name == claim_name && info.namespace_name == namespace_name) return &info;
  }
  return nullptr;
}

const PodResourceClaim* FindPodClaim(const Pod& pod, absl::string_view name) {
  for (const PodResourceClaim& pod_claim : pod.resource_claims) {
    if (pod_claim.name == name) return &pod_claim;
  }
  return nullptr;
}

}  // namespace

absl::string_view ResourceHealthStatusName(ResourceHealthStatus status) {
  switch (status) {
    case ResourceHealthStatus::kHealthy:
      return "Healthy";
    case ResourceHealthStatus::kUnhealthy:
      return "Unhealthy";
    case ResourceHealthStatus::kUnknown:
      break;
  }
  return "Unknown";
}

ResourceHealthStatus ToResourceHealthStatus(DeviceHealthStatus health) {
  switch (health) {
    case DeviceHealthStatus::kHealthy:
      return ResourceHealthStatus::kHealthy;
    case DeviceHealthStatus::kUnhealthy:
      return ResourceHealthStatus::kUnhealthy;
    case DeviceHealthStatus::kUnknown:
      break;
  }
  return ResourceHealthStatus::kUnknown;
}

ResourceHealth BuildResourceHealth(absl::string_view driver_name, const CheckpointDevice& device,
                                   const DeviceHealth& health, bool with_message) {
  ResourceHealth resource;
  // The CDI ID is what the container sees; a device without one is named in full.
  if (device.cdi_device_ids.has_value() && !device.cdi_device_ids->empty()) {
    resource.resource_id = device.cdi_device_ids->front();
  } else {
    resource.resource_id =
        absl::StrCat(driver_name, "/", device.pool_name, "/", device.device_name);
  }
  resource.health = ToResourceHealthStatus(health.health);
  if (with_message && !health.message.empty()) {
    // The cache keeps reports cut already; a state file a kubelet wrote may not be.
    resource.message = TruncateHealthMessage(health.message);
  }
  return resource;
}

std::string ClaimResourceStatusName(absl::string_view pod_claim_name, absl::string_view request) {
  if (request.empty()) return absl::StrCat("claim:", pod_claim_name);
  return absl::StrCat("claim:", pod_claim_name, "/", request);
}

std::vector<ResourceStatus> BuildContainerResourceStatuses(
    const Pod& pod, const Container& container, const std::vector<ClaimInfoState>& claim_infos,
    const HealthCache& health, const ClaimHealthOptions& options) {
  std::vector<ResourceStatus> statuses;
  // Resource IDs already listed, per entry (indexes into `statuses`).
  std::vector<std::set<std::string>> listed;
  for (const ContainerClaim& claim : container.claims) {
    const PodResourceClaim* pod_claim = FindPodClaim(pod, claim.name);
    if (pod_claim == nullptr) continue;
    // A claim not created yet, or one no template produced, has no devices to report.
    absl::StatusOr<ResolvedClaimName> resolved = ClaimName(pod, *pod_claim);
    if (!resolved.ok() || !resolved->name.has_value()) continue;
    const ClaimInfoState* info = FindClaimInfo(claim_infos, pod.namespace_name, *resolved->name);
    if (info == nullptr) continue;

    const std::string name = ClaimResourceStatusName(claim.name, claim.request);
    auto entry =
        std::find_if(statuses.begin(), statuses.end(),
                     [&name](const ResourceStatus& status) { return status.name == name; });
    size_t index = static_cast<size_t>(entry - statuses.begin());
    if (entry == statuses.end()) {
      statuses.push_back(ResourceStatus{name, {}});
      listed.emplace_back();
    }
    if (!info->driver_state.has_value()) continue;
    for (const auto& [driver_name, driver_state] : *info->driver_state) {
      if (!driver_state.devices.has_value()) continue;
      for (const CheckpointDevice& device : *driver_state.devices) {
        if (!HealthServesRequest(device, claim.request)) continue;
        ResourceHealth resource = BuildResourceHealth(
            driver_name, device, health.Get(driver_name, device.pool_name, device.device_name),
            options.with_message);
        if (!listed[index].insert(resource.resource_id).second) continue;
        statuses[index].resources.push_back(std::move(resource));
      }
    }
  }
  statuses.erase(
      std::remove_if(statuses.begin(), statuses.end(),
                     [](const ResourceStatus& status) { return status.resources.empty(); }),
      statuses.end());
  return statuses;
}

void UpdateAllocatedResourcesStatus(std::vector<ResourceStatus>& statuses,
                                    std::vector<ResourceStatus> dra_statuses) {
  for (ResourceStatus& dra_status : dra_statuses) {
    auto same =
        std::find_if(statuses.begin(), statuses.end(),
                     [&dra_status](const ResourceStatus& s) { return s.name == dra_status.name; });
    if (same != statuses.end()) {
      *same = std::move(dra_status);
    } else {
      statuses.push_back(std::move(dra_status));
    }
  }
  statuses.erase(
      std::remove_if(statuses.begin(), statuses.end(),
                     [](const ResourceStatus& status) { return status.resources.empty(); }),
      statuses.end());
}

std::vector<std::string> PodsUsingDevices(const std::vector<ClaimInfoState>& claims,
                                          absl::string_view driver_name,
                                          const std::vector<DeviceHealth>& devices) {
  std::set<std::pair<std::string, std::string>> changed;
  for (const DeviceHealth& device : devices) changed.emplace(device.pool_name, device.device_name);
  std::set<std::string> pods;
  for (const ClaimInfoState& claim : claims) {
    if (!claim.driver_state.has_value() || !claim.pod_uids.has_value()) continue;
    auto state = claim.driver_state->find(std::string(driver_name));
    if (state == claim.driver_state->end() || !state->second.devices.has_value()) continue;
    const bool affected = std::any_of(state->second.devices->begin(), state->second.devices->end(),
                                      [&changed](const CheckpointDevice& held) {
                                        return changed.contains({held.pool_name, held.device_name});
                                      });
    if (affected) pods.insert(claim.pod_uids->begin(), claim.pod_uids->end());
  }
  return {pods.begin(), pods.end()};
}

}  // namespace devmgr::dra
