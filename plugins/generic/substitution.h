// Per-device substitutions in the generic plugin's config. A few values of the generic plugin's
// config are templates, filled in for each device: env and annotation values, extraPaths, and
// the containerPath of a path entry. Three names are known:
//
//   {id}     the device ID the kubelet sees ("nvidia1", or "nvidia1-2" with count > 1)
//   {index}  the number the matched path ends with ("/dev/nvidia1" -> "1"); for a path that
//            ends in no digits, the device's position in its group (0, 1, ... in the order the
//            plugin first saw the paths)
//   {path}   the matched path, as the host names it ("/dev/nvidia1")
//
// Any other "{...}", or a '{' without its '}', is a config error: text with braces of its own
// cannot be written.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace devmgr::plugins {

// What the substitutions stand for, for one device.
struct DeviceValues {
  std::string id;
  std::string index;
  std::string path;
};

// ValidateTemplate: OK when every '{' in `text` starts a known substitution; InvalidArgument
// naming the first one that does not.
absl::Status ValidateTemplate(absl::string_view text);

// HasSubstitution: whether `text`, which passed ValidateTemplate, uses a substitution.
bool HasSubstitution(absl::string_view text);

// Expand replaces the substitutions in `text`, which passed ValidateTemplate.
std::string Expand(absl::string_view text, const DeviceValues& values);

}  // namespace devmgr::plugins
