// The pod as the device manager sees it: what a host fills in from its own pod objects before
// admission. Only what matters for devices is here: identity, the containers in start order
// with their kind (init, sidecar, regular), and each container's device counts per extended
// resource. CPU, memory and other native resources are the host's business and never appear.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace devmgr::devicemanager {

// What happens to a container's devices after it runs: a regular init container's devices may
// be reused by later containers of the pod; a sidecar (an init container with restartPolicy
// Always) and a regular container keep theirs for the pod's lifetime.
enum class ContainerType { kInit, kSidecar, kRegular };

struct Container {
  std::string name;
  ContainerType type = ContainerType::kRegular;
  // Extended resource name -> number of devices (the container's limit; for extended resources
  // Kubernetes requires the request to equal it). Resources with a count of 0 may be listed.
  std::map<std::string, int64_t> devices;

  bool operator==(const Container&) const = default;
};

// A container's extended resource that the scheduler satisfied through Dynamic Resource
// Allocation rather than a device plugin (pod.status.extendedResourceClaimStatus.requestMappings,
// KEP-5004): with ManagerOptions::dra_extended_resource the device manager leaves it to the DRA
// manager.
struct DraResourceMapping {
  std::string container_name;
  std::string resource_name;

  bool operator==(const DraResourceMapping&) const = default;
};

struct Pod {
  std::string uid;
  std::string namespace_name;
  std::string name;
  // Init containers (regular ones and sidecars) in start order, then the app containers.
  std::vector<Container> init_containers;
  std::vector<Container> containers;
  // The container resources that DRA serves instead (empty for most pods).
  std::vector<DraResourceMapping> dra_resource_mappings = {};

  // FindContainer: the init or app container called `name`, or nullptr.
  const Container* FindContainer(absl::string_view container_name) const;

  bool operator==(const Pod&) const = default;
};

// IsDraExtendedResource: `resource` of `container_name` is mapped to DRA (upstream's
// isDRAExtendedResource).
bool IsDraExtendedResource(const Pod& pod, absl::string_view container_name,
                           absl::string_view resource);

// WithoutDraExtendedResources: `container` of `pod` without the resources mapped to DRA.
Container WithoutDraExtendedResources(const Pod& pod, const Container& container);
// WithoutDraExtendedResources: `pod` with those resources left out of every container, and no
// mappings left (they are applied).
Pod WithoutDraExtendedResources(const Pod& pod);

}  // namespace devmgr::devicemanager
