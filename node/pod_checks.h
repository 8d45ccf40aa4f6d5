// The API server's checks of a pod's names and device resources, which every way a pod reaches
// the node goes through: a manifest (pod_manifest.h) and the admin API's structured pod
// (admin_convert.h). Each answers InvalidArgument naming the field, as the API server's field
// errors print, or OK.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace devmgr::node {

// A pod's name: a DNS subdomain (ValidatePodName).
absl::Status CheckPodName(absl::string_view field, absl::string_view name);
// A namespace's name, and a container's: a DNS label (ValidateNamespaceName,
// validateContainers).
absl::Status CheckLabelName(absl::string_view field, absl::string_view name);

// ResourceNameError: what the API server says of a container's resource name
// (validateContainerResourceName): a qualified name; without a domain, one of the standard
// resources; with one, an extended resource unless in kubernetes.io. Empty when it is valid.
std::string ResourceNameError(absl::string_view resource);

}  // namespace devmgr::node
