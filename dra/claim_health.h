// The DRA part of a pod's status (KEP-4680): the health of the devices each container gets from
// its ResourceClaims, as the kubelet's DRA manager fills ContainerStatus.allocatedResourcesStatus
// (UpdateAllocatedResourcesStatus in pkg/kubelet/cm/dra/manager.go), and which pods a change of
// device health concerns (the pods HandleWatchResourcesStream asks to be synced).
//
// One entry per claim a container names: "claim:<pod claim>" when it takes the whole claim,
// "claim:<pod claim>/<request>" when it names one request (the pod's name for the claim, not the
// ResourceClaim's). Its resources are the claim's prepared devices that serve the container: a
// device's resourceID is its first CDI device ID, or "<driver>/<pool>/<device>" when it has
// none; its health and message are the HealthCache's.
//
// devicemanager/pod_status.h has the same shape for device plugins but no message; these types
// add it. Everything here is pure and thread-safe (HealthCache is).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "dra/checkpoint.h"
#include "dra/claim.h"
#include "dra/health_cache.h"

namespace devmgr::dra {

// The values of Kubernetes' ResourceHealthStatus.
enum class ResourceHealthStatus { kHealthy, kUnhealthy, kUnknown };

// ResourceHealthStatusName: the API's spelling ("Healthy", "Unhealthy", "Unknown").
absl::string_view ResourceHealthStatusName(ResourceHealthStatus status);

// One device a container holds (v1.ResourceHealth).
struct ResourceHealth {
  std::string resource_id;
  ResourceHealthStatus health = ResourceHealthStatus::kUnknown;
  // Set only when the driver gave a message (and messages are reported); at most
  // kMaxHealthMessageBytes.
  std::optional<std::string> message;

  bool operator==(const ResourceHealth&) const = default;
};

// The devices of one claim (or one request of it) a container holds (v1.ResourceStatus).
struct ResourceStatus {
  std::string name;
  std::vector<ResourceHealth> resources;

  bool operator==(const ResourceStatus&) const = default;
};

// ToResourceHealthStatus maps the cache's health to the API's.
ResourceHealthStatus ToResourceHealthStatus(DeviceHealthStatus health);

// BuildResourceHealth: the pod status entry of one device of `driver_name`, with its health
// `health` (from HealthCache::Get). The message, cut, is set when non-empty and `with_message`
// (the kubelet's feature gate ResourceHealthStatusMessage).
ResourceHealth BuildResourceHealth(absl::string_view driver_name, const CheckpointDevice& device,
                                   const DeviceHealth& health, bool with_message = true);

// ClaimResourceStatusName: "claim:<pod_claim_name>", or "claim:<pod_claim_name>/<request>".
std::string ClaimResourceStatusName(absl::string_view pod_claim_name, absl::string_view request);

struct ClaimHealthOptions {
  // Report the drivers' messages (feature gate ResourceHealthStatusMessage, on by default since
  // Kubernetes 1.36).
  bool with_message = true;
};

// BuildContainerResourceStatuses: the DRA entries of `container`'s allocatedResourcesStatus.
// `claim_infos` are the states of the claims it uses (dra::Manager::GetContainerClaimInfos; any
// superset will do): each claim the container names is found by the ResourceClaim name its pod
// claim resolves to (dra/claim_name.h) and the pod's namespace. A claim that does not resolve or
// is not among them is left out, as is an entry without devices. Entries come in the order the
// container names its claims, devices in driver-name order; two claims naming the same entry
// share it, and a device is listed once per entry.
std::vector<ResourceStatus> BuildContainerResourceStatuses(
    const Pod& pod, const Container& container, const std::vector<ClaimInfoState>& claim_infos,
    const HealthCache& health, const ClaimHealthOptions& options = {});

// UpdateAllocatedResourcesStatus merges `dra_statuses` into a container's
// allocatedResourcesStatus: an entry of the same name is replaced, a new one appended, the others
// (a device plugin's) kept; an entry left without resources is dropped, as upstream does.
void UpdateAllocatedResourcesStatus(std::vector<ResourceStatus>& statuses,
                                    std::vector<ResourceStatus> dra_statuses);

// PodsUsingDevices: the UIDs (sorted, once each) of the pods of the claims that hold any of
// `devices` of `driver_name` (the devices HealthCache::Update says changed): the pods whose
// status needs a new look.
std::vector<std::string> PodsUsingDevices(const std::vector<ClaimInfoState>& claims,
                                          absl::string_view driver_name,
                                          const std::vector<DeviceHealth>& devices);

}  // namespace devmgr::dra
