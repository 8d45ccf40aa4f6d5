// CheckPluginInfo: the watcher's own checks on the PluginInfo a plugin returns from GetInfo, made
// before any handler sees it. A plugin is untrusted, but its endpoint is the handler's business:
// as upstream, any path is handed over, and the handler that dials it refuses what it cannot
// dial, with its own text. The watcher refuses only what it must not pass around at all.
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "pluginregistration/v1/api.pb.h"

namespace devmgr::pluginwatcher {

// CheckPluginInfo: OK, or InvalidArgument with a reason fit to send back to the plugin, unless
// the name is at most `max_name_bytes` long (it ends up in maps and logs) and the endpoint has
// no NUL byte (a path the kernel would read only up to it). Pure; thread-safe.
absl::Status CheckPluginInfo(const pluginregistration::PluginInfo& info, size_t max_name_bytes);

}  // namespace devmgr::pluginwatcher
