// PluginHandler: what a host component implements to receive the plugins of one type that the
// plugin watcher finds in plugins_registry/ (upstream's cache.PluginHandler). The host registers
// one handler per PluginInfo.type with Watcher::AddHandler; the device manager's "DevicePlugin"
// handler forwards these three calls to its Manager methods of the same names and signatures.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace devmgr::pluginwatcher {

// The PluginInfo.type strings of pluginregistration v1 (constants.go).
inline constexpr char kCSIPlugin[] = "CSIPlugin";
inline constexpr char kDevicePlugin[] = "DevicePlugin";
inline constexpr char kDRAPlugin[] = "DRAPlugin";

// Threading: every call comes from one of the watcher's worker threads, never from the loop
// thread, and may block (a handler typically dials the plugin's endpoint). Calls for the same
// registration socket never overlap and come in the order Validate, Register, ..., DeRegister;
// calls for different sockets may run at the same time on different workers. The watcher holds no
// lock of its own while it calls a handler, so a handler may call back into the watcher.
//
// `name`, `endpoint` and `versions` come from the plugin's GetInfo answer and are untrusted,
// except that the watcher has already checked that `name` is not over-long and `endpoint` has no
// NUL byte. `endpoint` may be any path, as upstream: a handler that dials it refuses one it
// cannot dial. An empty PluginInfo.endpoint arrives here as the registration socket's own path.
class PluginHandler {
 public:
  virtual ~PluginHandler() = default;

  // ValidatePlugin decides whether the plugin may register. An error is sent back to the plugin
  // as "RegisterPlugin error -- plugin validation failed with err: <message>", and the watcher
  // retries later with back-off.
  virtual absl::Status ValidatePlugin(absl::string_view name, absl::string_view endpoint,
                                      const std::vector<std::string>& versions) = 0;

  // RegisterPlugin takes the plugin into use; called only after ValidatePlugin succeeded. An
  // error is sent back as "RegisterPlugin error -- plugin registration failed with err:
  // <message>". As upstream, the plugin is not tried again until its socket is re-created; unlike
  // upstream it gets no DeRegisterPlugin call when its socket goes away (its name and endpoint
  // may be those of a plugin this handler registered from another socket).
  virtual absl::Status RegisterPlugin(absl::string_view name, absl::string_view endpoint,
                                      const std::vector<std::string>& versions) = 0;

  // DeRegisterPlugin: the registration socket of a plugin that RegisterPlugin took into use has
  // gone away (or was re-created, in which case RegisterPlugin follows).
  virtual void DeRegisterPlugin(absl::string_view name, absl::string_view endpoint) = 0;
};

}  // namespace devmgr::pluginwatcher
