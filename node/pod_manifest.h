// Kubernetes Pod manifests (what `kubectl get pod -o yaml` prints, or what someone wrote) read
// into the device manager's pod model. YAML or JSON. Only the fields that matter to devices are
// read: metadata.uid/name/namespace, spec.initContainers (with restartPolicy) and
// spec.containers with their extended-resource limits and requests. Everything else is
// ignored. Errors name the field: `spec.containers[1].resources.limits["example.com/gpu"]:
// quantity "1.5" is not a whole number of devices`.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devicemanager/pod.h"

namespace devmgr::node {

struct PodManifest {
  devicemanager::Pod pod;
  // metadata.uid was missing and pod.uid was generated (a random UUID).
  bool generated_uid = false;
};

// ParsePodManifest reads one Pod. InvalidArgument for malformed YAML/JSON, a document that is
// not a Pod, a missing or duplicate container name, a missing pod name, an init container
// restartPolicy other than Always, or an extended resource whose count is not a whole,
// non-negative number, has a request without a limit, or a request that differs from its
// limit (Kubernetes' rules for resources that cannot be overcommitted).
absl::StatusOr<PodManifest> ParsePodManifest(absl::string_view text);

}  // namespace devmgr::node
