// CheckPluginInfo: the watcher's own checks on the PluginInfo a plugin returns from GetInfo, made
// before any handler sees it, because a plugin is untrusted: its endpoint is a path the node will
// dial and hand to other components, and its name ends up in maps and logs.
#pragma once

#include <cstddef>
#include <filesystem>
#include <vector>

#include "absl/status/status.h"
#include "pluginregistration/v1/api.pb.h"

namespace devmgr::pluginwatcher {

// CheckPluginInfo: OK, or InvalidArgument with a reason fit to send back to the plugin, unless
// - the name is at most `max_name_bytes` long, and
// - the endpoint (already defaulted to the registration socket when empty) is an absolute path
//   without NUL bytes, "." or ".." components, of at most kMaxUnixSocketPathBytes, strictly
//   inside one of `roots` (compared by path components, without touching the filesystem).
// Pure; thread-safe.
absl::Status CheckPluginInfo(const pluginregistration::PluginInfo& info,
                             const std::vector<std::filesystem::path>& roots,
                             size_t max_name_bytes);

}  // namespace devmgr::pluginwatcher
