// Reading the Dynamic Resource Allocation parts of Kubernetes manifests: a ResourceClaim
// document (resource.k8s.io/v1; v1beta1 and v1beta2 have the same fields the node reads), a
// Pod's spec.resourceClaims and status.resourceClaimStatuses, and a container's
// resources.claims. Only what the node needs is read; errors name the field, as
// pod_manifest.h's do.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devicemanager/pod.h"
#include "dra/claim.h"

namespace devmgr::node {

// The apiVersions of ResourceClaim documents the node reads.
inline constexpr absl::string_view kResourceClaimApiVersions[] = {
    "resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"};

// ReadResourceClaim reads one ResourceClaim document: metadata (name required, a DNS subdomain;
// a missing uid is generated, as the API server would; a missing namespace is left empty),
// ownerReferences,
// status.allocation.devices.results and status.reservedFor. InvalidArgument naming the field
// for a missing result field or a wrong type.
absl::StatusOr<dra::ResourceClaim> ReadResourceClaim(const YAML::Node& root);

// ReadPodResourceClaims reads a Pod's spec.resourceClaims (each names a claim or a claim
// template, exactly one of them), spec.schedulingGroup.podGroupName and
// status.resourceClaimStatuses into `pod`, whose name is read already. Names must be unique
// and valid as the API server checks them (the entry's a DNS label, the claim's or template's a
// DNS subdomain, and "<pod>-<entry>" one for a template).
absl::Status ReadPodResourceClaims(const YAML::Node& spec, const YAML::Node& status, dra::Pod& pod);

// ReadContainerClaims reads one container's resources.claims (`field` names them in errors).
// Each must name one of `pod`'s resourceClaims.
absl::StatusOr<std::vector<dra::ContainerClaim>> ReadContainerClaims(const YAML::Node& claims,
                                                                     absl::string_view field,
                                                                     const dra::Pod& pod);

// ReadExtendedResourceClaimStatus reads a Pod's status.extendedResourceClaimStatus: the claim
// the scheduler made for the container resources it gave to DRA (KEP-5004), and which request
// of it serves which container resource. resourceClaimName and each mapping's containerName,
// resourceName and requestName are required; std::nullopt when the field is absent.
absl::StatusOr<std::optional<dra::PodExtendedResourceClaimStatus>> ReadExtendedResourceClaimStatus(
    const YAML::Node& status);

}  // namespace devmgr::node
