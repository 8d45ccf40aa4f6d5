// Kubernetes Pod manifests (what `kubectl get pod -o yaml` prints, or what someone wrote) read
// into the device manager's pod model. YAML or JSON. Only the fields that matter to devices are
// read: metadata.uid/name/namespace, spec.initContainers (with restartPolicy) and
// spec.containers with their extended-resource limits and requests, and for Dynamic Resource
// Allocation spec.resourceClaims, status.resourceClaimStatuses and each container's
// resources.claims. Everything else is ignored. Errors name the field:
// `spec.containers[1].resources.limits["example.com/gpu"]: quantity "1.5" is not a whole number
// of devices`.
//
// A YAML stream may hold, beside the one Pod, the ResourceClaim documents it uses
// (claim_manifest.h): on a node without an API server claims travel with their pod.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devicemanager/pod.h"
#include "node/pod_claims.h"
#include "structured/feature_gates.h"

namespace devmgr::node {

struct PodManifest {
  devicemanager::Pod pod;
  // metadata.uid was missing and pod.uid was generated (a random UUID).
  bool generated_uid = false;
  // The pod's claims and the ResourceClaim documents of the stream (each in the pod's
  // namespace; a claim without one is put there).
  PodClaims claims;
};

// ParsePodManifest reads one Pod and its ResourceClaims. InvalidArgument for malformed
// YAML/JSON, a stream without exactly one Pod or with documents other than ResourceClaims
// beside it, a malformed claim or one of another namespace, a container claim that names no
// pod claim, a missing or duplicate container name, a missing pod name, an init container
// restartPolicy other than Always, or an extended resource whose count is not a whole,
// non-negative number, has a request without a limit, or a request that differs from its
// limit (Kubernetes' rules for resources that cannot be overcommitted). A claim's selectors are
// compiled as the API server compiles a new claim's, with the node's DRA `features`
// (structured::NewSelectorCost).
absl::StatusOr<PodManifest> ParsePodManifest(absl::string_view text,
                                             const structured::Features& features = {});

// RequestedResources: the resources `container` requests a non-zero amount of, by name: its
// DRA half's requested_resources.
std::vector<std::string> RequestedResources(const devicemanager::Container& container);

}  // namespace devmgr::node
