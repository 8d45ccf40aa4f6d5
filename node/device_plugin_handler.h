// DevicePluginHandler: the plugin watcher's "DevicePlugin" handler, forwarding to the device
// manager. A device plugin that registers through plugins_registry/ becomes an endpoint exactly
// like one that called Register on kubelet.sock. It lives with the host (here, the daemon)
// because devicemanager/ and pluginwatcher/ know nothing of each other.
#pragma once

#include <string>
#include <vector>

#include "devicemanager/manager.h"
#include "pluginwatcher/handler.h"

namespace devmgr::node {

class DevicePluginHandler final : public pluginwatcher::PluginHandler {
 public:
  // `manager` is not owned and must outlive the watcher that calls this handler.
  explicit DevicePluginHandler(devicemanager::Manager& manager) : manager_(manager) {}

  absl::Status ValidatePlugin(absl::string_view name, absl::string_view endpoint,
                              const std::vector<std::string>& versions) override {
    return manager_.ValidatePlugin(name, endpoint, versions);
  }
  absl::Status RegisterPlugin(absl::string_view name, absl::string_view endpoint,
                              const std::vector<std::string>& versions) override {
    return manager_.RegisterPlugin(name, endpoint, versions);
  }
  void DeRegisterPlugin(absl::string_view name, absl::string_view endpoint) override {
    manager_.DeRegisterPlugin(name, endpoint);
  }

 private:
  devicemanager::Manager& manager_;
};

}  // namespace devmgr::node
