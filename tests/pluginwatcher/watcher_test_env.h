// WatcherTestEnv: the fixture of the plugin watcher's tests: a temporary root folder with
// plugins_registry/ inside, a FakePluginHandler for "DevicePlugin", the watcher under test, and
// helpers that serve fake plugins and wait for the watcher's state.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "pluginwatcher/watcher.h"
#include "tests/pluginwatcher/fake_plugin_handler.h"
#include "tests/pluginwatcher/fake_registration_plugin.h"
#include "tests/testlib/fake_clock.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::testing {

inline constexpr auto kWait = std::chrono::seconds(20);

class WatcherTestEnv : public ::testing::Test {
 protected:
  std::filesystem::path Registry() const { return dir_.Sub("plugins_registry"); }
  std::string Socket(const std::string& name) const { return (Registry() / name).string(); }

  pluginwatcher::WatcherOptions Options() const {
    return pluginwatcher::WatcherOptions::ForRootDir(dir_.path());
  }

  void StartWatcher() { StartWatcher(Options()); }
  void StartWatcher(pluginwatcher::WatcherOptions options) {
    watcher_ = pluginwatcher::CreateWatcher(std::move(options));
    watcher_->AddHandler(pluginwatcher::kDevicePlugin, handler_);
    ASSERT_TRUE(watcher_->Start().ok());
  }

  // Serve starts a fake plugin; the test fails if it cannot.
  std::unique_ptr<FakeRegistrationPlugin> Serve(const std::string& socket,
                                                pluginregistration::PluginInfo info) {
    auto plugin = std::make_unique<FakeRegistrationPlugin>(socket, std::move(info));
    EXPECT_TRUE(plugin->Serve().ok()) << socket;
    return plugin;
  }
  std::unique_ptr<FakeRegistrationPlugin> ServeDevicePlugin(const std::string& socket,
                                                            const std::string& name) {
    return Serve(socket, MakeInfo(pluginwatcher::kDevicePlugin, name));
  }

  bool InDesiredState(const std::string& socket) const {
    auto plugins = watcher_->GetPluginsToRegister();
    return std::any_of(plugins.begin(), plugins.end(),
                       [&](const auto& p) { return p.socket_path == socket; });
  }
  bool InActualState(const std::string& socket) const {
    auto plugins = watcher_->GetRegisteredPlugins();
    return std::any_of(plugins.begin(), plugins.end(),
                       [&](const auto& p) { return p.socket_path == socket; });
  }

  // Declared in lifetime order: the watcher stops before the handler, the clock and the folder
  // go.
  TempDir dir_;
  FakePluginHandler handler_;
  // For the tests that give it to the watcher (WatcherOptions::clock).
  FakeClock clock_;
  pluginwatcher::WatcherPtr watcher_;
};

}  // namespace devmgr::testing
