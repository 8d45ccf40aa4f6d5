// DraPluginHandler: the plugin watcher's "DRAPlugin" handler, forwarding to the DRA manager's
// driver registry, and telling the node when a driver registered (so the claims waiting for it
// are prepared at once rather than at the next periodic pass). It lives with the host because
// dra/ and pluginwatcher/ know nothing of each other.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "dra/driver_registry.h"
#include "pluginwatcher/handler.h"

namespace devmgr::node {

class DraPluginHandler final : public pluginwatcher::PluginHandler {
 public:
  // `drivers` is not owned and must outlive the watcher that calls this handler.
  // `on_registered` runs on the watcher's thread after each registration; it must not block.
  DraPluginHandler(dra::DriverRegistry& drivers, std::function<void()> on_registered)
      : drivers_(drivers), on_registered_(std::move(on_registered)) {}

  absl::Status ValidatePlugin(absl::string_view name, absl::string_view endpoint,
                              const std::vector<std::string>& versions) override {
    return drivers_.ValidatePlugin(name, endpoint, versions);
  }
  absl::Status RegisterPlugin(absl::string_view name, absl::string_view endpoint,
                              const std::vector<std::string>& versions) override {
    absl::Status registered = drivers_.RegisterPlugin(name, endpoint, versions);
    if (registered.ok() && on_registered_) on_registered_();
    return registered;
  }
  void DeRegisterPlugin(absl::string_view name, absl::string_view endpoint) override {
    drivers_.DeRegisterPlugin(name, endpoint);
  }

 private:
  dra::DriverRegistry& drivers_;
  const std::function<void()> on_registered_;
};

}  // namespace devmgr::node
