// The reconciler: upstream's reconciler_test.go by name. Upstream feeds its desired-state cache by
// hand; here the sockets themselves do, through the watcher, which is the only way in.
#include <memory>
#include <string>
#include <utility>

#include "tests/pluginwatcher/watcher_test_env.h"

namespace devmgr::testing {
namespace {

using Kind = HandlerCall::Kind;

using ReconcilerTest = WatcherTestEnv;

TEST_F(ReconcilerTest, Test_Run_Positive_DoNothing) {
  StartWatcher();
  EXPECT_TRUE(watcher_->GetRegisteredPlugins().empty());
  EXPECT_TRUE(watcher_->GetPluginsToRegister().empty());
  EXPECT_TRUE(handler_.calls().empty());
}

TEST_F(ReconcilerTest, Test_Run_Positive_Register) {
  StartWatcher();
  const std::string socket = Socket("plugin.sock");
  auto plugin = ServeDevicePlugin(socket, "example-plugin");
  ASSERT_TRUE(WaitFor([&] { return InActualState(socket); }, kWait));
  auto registered = watcher_->GetRegisteredPlugins();
  ASSERT_EQ(registered.size(), 1u);
  EXPECT_EQ(registered[0].socket_path, socket);
  EXPECT_EQ(registered[0].type, "DevicePlugin");
  EXPECT_EQ(registered[0].name, "example-plugin");
  EXPECT_EQ(registered[0].endpoint, socket);
  EXPECT_EQ(registered[0].timestamp, watcher_->GetPluginsToRegister().at(0).timestamp);
  ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
  // Validate, then Register, with what GetInfo said.
  auto calls = handler_.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].kind, Kind::kValidate);
  EXPECT_EQ(calls[1].kind, Kind::kRegister);
  EXPECT_EQ(calls[1].versions, (std::vector<std::string>{"v1beta1", "v1beta2"}));
}

TEST_F(ReconcilerTest, Test_Run_Positive_RegisterThenUnregister) {
  StartWatcher();
  const std::string socket = Socket("plugin.sock");
  auto plugin = ServeDevicePlugin(socket, "example-plugin");
  ASSERT_TRUE(WaitFor([&] { return InActualState(socket); }, kWait));
  plugin->Stop();
  ASSERT_TRUE(WaitFor([&] { return !InActualState(socket); }, kWait));
  ASSERT_TRUE(WaitFor([&] { return handler_.Count(Kind::kDeRegister) == 1; }, kWait));
  EXPECT_EQ(handler_.calls().back().name, "example-plugin");
  EXPECT_EQ(handler_.calls().back().endpoint, socket);
}

TEST_F(ReconcilerTest, Test_Run_Positive_ReRegister) {
  StartWatcher();
  const std::string socket = Socket("plugin2.sock");
  auto plugin = ServeDevicePlugin(socket, "example-plugin2");
  ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
  const absl::Time first = watcher_->GetRegisteredPlugins().at(0).timestamp;

  // The socket is re-created: the plugin is unregistered first, then registered anew.
  plugin->Stop();
  plugin = ServeDevicePlugin(socket, "example-plugin2");
  ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
  ASSERT_TRUE(WaitFor(
      [&] {
        auto registered = watcher_->GetRegisteredPlugins();
        return registered.size() == 1 && registered[0].timestamp > first;
      },
      kWait));
  std::vector<Kind> kinds;
  for (const auto& call : handler_.calls()) kinds.push_back(call.kind);
  EXPECT_EQ(kinds, (std::vector<Kind>{Kind::kValidate, Kind::kRegister, Kind::kDeRegister,
                                      Kind::kValidate, Kind::kRegister}));
}

// The desired and actual state carry the injected clock's time, not the system's.
TEST_F(ReconcilerTest, TimestampsComeFromTheInjectedClock) {
  pluginwatcher::WatcherOptions options = Options();
  options.clock = &clock_;
  StartWatcher(std::move(options));
  // The socket is stamped when the watcher sees it, with the clock standing still. A handshake
  // that fails then (a worker slow to answer on a loaded machine) is tried again after a
  // back-off measured on the same injected clock, so the wait for the registration moves it on.
  const auto registered_at = [&](const std::string& socket, absl::Time when) {
    const bool seen = WaitFor(
        [&] {
          std::vector<pluginwatcher::DesiredPlugin> desired = watcher_->GetPluginsToRegister();
          return desired.size() == 1 && desired[0].socket_path == socket &&
                 desired[0].timestamp == when;
        },
        kWait);
    return seen && WaitFor(
                       [&] {
                         clock_.Advance(absl::Milliseconds(100));
                         std::vector<pluginwatcher::RegisteredPlugin> registered =
                             watcher_->GetRegisteredPlugins();
                         return registered.size() == 1 && registered[0].socket_path == socket &&
                                registered[0].timestamp == when;
                       },
                       kWait);
  };
  const absl::Time start = clock_.Now();
  const std::string socket = Socket("plugin.sock");
  auto plugin = ServeDevicePlugin(socket, "example-plugin");
  ASSERT_TRUE(registered_at(socket, start));
  EXPECT_EQ(watcher_->GetPluginsToRegister().at(0).timestamp, start);

  // A socket re-created an hour later (by the clock) is timestamped an hour later.
  clock_.Advance(absl::Hours(1));
  const absl::Time later = clock_.Now();
  plugin->Stop();
  plugin = ServeDevicePlugin(socket, "example-plugin");
  ASSERT_TRUE(registered_at(socket, later));
  EXPECT_EQ(watcher_->GetPluginsToRegister().at(0).timestamp, later);
}

}  // namespace
}  // namespace devmgr::testing
