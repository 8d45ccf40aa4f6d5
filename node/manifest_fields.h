// What the node's manifest readers (Pods, ResourceClaims) share: yaml-cpp lookups that never
// throw (yaml-cpp reads JSON too), field errors that name where the problem is
// ("spec.containers[1].name: is required"), and the UIDs the API server would have assigned.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr::node {

// yaml-cpp answers a lookup of a missing key with an invalid node whose type queries throw;
// these ask safely.
inline bool IsPresent(const YAML::Node& node) { return node.IsDefined() && !node.IsNull(); }
inline bool IsMapNode(const YAML::Node& node) { return node.IsDefined() && node.IsMap(); }

// FieldError: InvalidArgument "FIELD: WHY".
absl::Status FieldError(absl::string_view field, absl::string_view why);

// NameError: the field errors the API server gives a name that `messages` (a name format's
// check, common/k8s_names.h) found invalid, as Go prints them; OK when there are none.
absl::Status NameError(absl::string_view field, absl::string_view name,
                       const std::vector<std::string>& messages);

// ReadString: a scalar string field; absent or null gives "".
absl::StatusOr<std::string> ReadString(const YAML::Node& node, absl::string_view field);

// NewUid: a random (version 4) UUID, as the API server assigns to a new object.
std::string NewUid();

}  // namespace devmgr::node
