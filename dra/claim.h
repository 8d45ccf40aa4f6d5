// The parts of the Kubernetes objects the DRA manager reads (resource.k8s.io/v1 ResourceClaim,
// core/v1 Pod), as plain values, and the ClaimSource through which a host hands it claims.
// Field names follow the API's; absent optional fields are std::nullopt.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace devmgr::dra {

// status.allocation.devices.results[] of a ResourceClaim.
struct DeviceRequestAllocationResult {
  std::string request;
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<std::string> share_id;
  // Admin access: the device is used alongside whoever holds it, and holds nothing itself.
  bool admin_access = false;
  // consumedCapacity: what this share takes of the device's capacities (DRAConsumableCapacity),
  // capacity name -> quantity as the API writes it ("10Gi").
  std::map<std::string, std::string> consumed_capacity = {};
  // skipNodeOperations (DRAOptionalNodeOperations): the node operations that the device's
  // ResourceSlice said need not run for it, copied at allocation ("NodePrepareResources",
  // "NodeUnprepareResources", "*" for all; other values are a newer API's and are ignored).
  std::vector<std::string> skip_node_operations = {};

  bool operator==(const DeviceRequestAllocationResult&) const = default;
};

// status.allocation.devices.config[] of a ResourceClaim: a configuration of the devices
// allocated for `requests` (none: for all of the claim's), from the device class or the claim.
// The API has one kind, opaque: parameters for one driver, which the driver reads to set the
// devices up (upstream's drivers read them from the claim they fetch).
struct DeviceAllocationConfiguration {
  std::string source;  // "FromClass" or "FromClaim"
  std::vector<std::string> requests;
  std::string driver;      // opaque.driver
  std::string parameters;  // opaque.parameters, as compact JSON text

  bool operator==(const DeviceAllocationConfiguration&) const = default;
};

// metadata.ownerReferences[].
struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;

  bool operator==(const OwnerReference&) const = default;
};

// status.reservedFor[]: a consumer of the claim (for a pod: resource "pods").
struct ResourceClaimConsumerReference {
  std::string api_group;
  std::string resource;
  std::string name;
  std::string uid;

  bool operator==(const ResourceClaimConsumerReference&) const = default;
};

// The annotation the ResourceClaim controller puts on a claim it made from a template: the
// pod's name for the claim (upstream's resourceapi.PodResourceClaimAnnotation).
inline constexpr char kPodClaimNameAnnotation[] = "resource.kubernetes.io/pod-claim-name";

struct ResourceClaim {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::vector<OwnerReference> owner_references;
  // status.allocation.devices.results; std::nullopt when the claim is not allocated.
  std::optional<std::vector<DeviceRequestAllocationResult>> allocation;
  // status.allocation.devices.config, in the order the allocation gives (class configurations
  // before the claim's); empty when the claim is not allocated.
  std::vector<DeviceAllocationConfiguration> allocation_config;
  std::vector<ResourceClaimConsumerReference> reserved_for;
  // metadata.annotations["resource.kubernetes.io/pod-claim-name"]: the pod's name for a claim
  // made from a template (pod.spec.resourceClaims[].name), which its generated name hides.
  std::optional<std::string> pod_claim_name = std::nullopt;

  bool operator==(const ResourceClaim&) const = default;
};

// spec.resourceClaims[] of a pod: a claim by name, or one generated from a template.
struct PodResourceClaim {
  std::string name;
  std::optional<std::string> resource_claim_name;
  std::optional<std::string> resource_claim_template_name;

  bool operator==(const PodResourceClaim&) const = default;
};

// status.resourceClaimStatuses[]: the name of the claim generated for a pod claim (std::nullopt:
// none was needed).
struct PodResourceClaimStatus {
  std::string name;
  std::optional<std::string> resource_claim_name;

  bool operator==(const PodResourceClaimStatus&) const = default;
};

// resources.claims[] of a container: a pod claim it uses, optionally one request of it.
struct ContainerClaim {
  std::string name;
  std::string request;

  bool operator==(const ContainerClaim&) const = default;
};

struct Container {
  std::string name;
  std::vector<ContainerClaim> claims;
  // The resources the container requests a non-zero amount of (resources.requests), by name:
  // which of the pod's extended-resource mappings apply to it.
  std::vector<std::string> requested_resources;
  // restartPolicy: "Always" on an init container that is a sidecar, else empty.
  std::string restart_policy = {};

  bool operator==(const Container&) const = default;
};

// status.extendedResourceClaimStatus.requestMappings[]: an extended resource of a container
// that the scheduler satisfied with a request of the pod's extended-resource claim (KEP-5004).
struct ContainerExtendedResourceRequest {
  std::string container_name;
  std::string resource_name;
  std::string request_name;

  bool operator==(const ContainerExtendedResourceRequest&) const = default;
};

// status.extendedResourceClaimStatus: the claim the scheduler created for the pod's extended
// resources that DRA devices back (a device class's extendedResourceName).
struct PodExtendedResourceClaimStatus {
  std::vector<ContainerExtendedResourceRequest> request_mappings;
  std::string resource_claim_name;

  bool operator==(const PodExtendedResourceClaimStatus&) const = default;
};

struct Pod {
  std::string uid;
  std::string namespace_name;
  std::string name;
  std::vector<PodResourceClaim> resource_claims;
  std::vector<PodResourceClaimStatus> resource_claim_statuses;
  std::optional<PodExtendedResourceClaimStatus> extended_resource_claim_status;
  // spec.schedulingGroup.podGroupName: the PodGroup of the Workload API (KEP-5729) the pod
  // belongs to, whose claims it may use under feature gate DRAWorkloadResourceClaims.
  std::optional<std::string> pod_group_name;
  std::vector<Container> init_containers;
  std::vector<Container> containers;

  bool operator==(const Pod&) const = default;
};

// ClaimSource: where the manager gets ResourceClaims (upstream reads them from the API server).
// The host implements it: from an API server, or from claims that travel with the pod.
// Called from the thread of PrepareResources, never with the manager's lock held; it may block
// (a bounded time, as an API call).
class ClaimSource {
 public:
  virtual ~ClaimSource() = default;
  // GetClaim: ResourceClaim `name` in `namespace_name`; NotFound when there is none.
  virtual absl::StatusOr<ResourceClaim> GetClaim(const std::string& namespace_name,
                                                 const std::string& name) = 0;
};

}  // namespace devmgr::dra
