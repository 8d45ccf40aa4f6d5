// The device part of a pod's status: the health of the devices each container holds, as
// Kubernetes reports it in ContainerStatus.allocatedResourcesStatus (KEP-4680, feature gate
// ResourceHealthStatus). The host keeps its own pod status; Manager::UpdateAllocatedResourcesStatus
// fills these fields of it, as upstream's fills v1.PodStatus. Plain values; no behaviour beyond
// naming the health values.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace devmgr::devicemanager {

// The values of Kubernetes' ResourceHealthStatus. The device manager reports kHealthy or
// kUnhealthy from its plugins' snapshots, and kUnknown while a resource's plugin is away (see
// Manager::UpdateAllocatedResourcesStatus).
enum class ResourceHealth { kHealthy, kUnhealthy, kUnknown };

// ResourceHealthName: the API's spelling ("Healthy", "Unhealthy", "Unknown").
constexpr absl::string_view ResourceHealthName(ResourceHealth health) {
  switch (health) {
    case ResourceHealth::kHealthy:
      return "Healthy";
    case ResourceHealth::kUnhealthy:
      return "Unhealthy";
    case ResourceHealth::kUnknown:
      break;
  }
  return "Unknown";
}

// One device a container holds, with its health (v1.ResourceHealth; for a device-plugin
// resource the resource ID is the device ID).
struct ResourceHealthEntry {
  std::string resource_id;
  ResourceHealth health = ResourceHealth::kHealthy;

  bool operator==(const ResourceHealthEntry&) const = default;
};

// The devices of one resource a container holds (v1.ResourceStatus).
struct ResourceStatus {
  // The extended resource name.
  std::string name;
  std::vector<ResourceHealthEntry> resources;

  bool operator==(const ResourceStatus&) const = default;
};

// The device part of one container's status (v1.ContainerStatus).
struct ContainerStatus {
  std::string name;
  // One entry per resource; UpdateAllocatedResourcesStatus replaces the entry of each resource
  // the container holds and leaves the others (for instance a DRA manager's) alone.
  std::vector<ResourceStatus> allocated_resources_status;

  bool operator==(const ContainerStatus&) const = default;
};

// The device part of one pod's status (v1.PodStatus): the containers the host reports.
struct PodStatus {
  std::vector<ContainerStatus> container_statuses;

  bool operator==(const PodStatus&) const = default;
};

}  // namespace devmgr::devicemanager
