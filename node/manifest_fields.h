// What the node's manifest readers (Pods, ResourceClaims) share: yaml-cpp lookups that never
// throw (yaml-cpp reads JSON too), field errors that name where the problem is
// ("spec.containers[1].name: is required"), and the UIDs the API server would have assigned.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

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

// ReadString: a scalar string field; absent or null gives "".
absl::StatusOr<std::string> ReadString(const YAML::Node& node, absl::string_view field);

// NewUid: a random (version 4) UUID, as the API server assigns to a new object.
std::string NewUid();

}  // namespace devmgr::node
