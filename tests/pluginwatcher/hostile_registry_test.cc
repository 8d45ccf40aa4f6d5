// Hostile names in plugins_registry: symlinks, one to a registration socket outside and one to
// a folder outside that holds a socket, which the watcher never dials through, whether the
// symlink was there at Start or appears later, while a real plugin beside them registers as
// usual; and a socket whose name gRPC would dial as another's.
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "tests/pluginwatcher/watcher_test_env.h"

namespace devmgr::testing {
namespace {

namespace fs = std::filesystem;
using HostileRegistryTest = WatcherTestEnv;

TEST_F(HostileRegistryTest, NeverDialsThroughASymlink) {
  const fs::path outside = dir_.Sub("outside");
  fs::create_directories(outside / "folder");
  fs::create_directories(Registry());
  auto lure = ServeDevicePlugin((outside / "lure.sock").string(), "example.com/lure");
  auto deeper =
      ServeDevicePlugin((outside / "folder" / "deeper.sock").string(), "example.com/deep");

  // One of each kind before Start (found by the walk), one of each after (found by inotify).
  fs::create_symlink(outside / "lure.sock", Registry() / "before.sock");
  fs::create_symlink(outside / "folder", Registry() / "before-folder");
  StartWatcher();
  fs::create_symlink(outside / "lure.sock", Registry() / "after.sock");
  fs::create_symlink(outside / "folder", Registry() / "after-folder");

  // Events are handled in order: once this plugin is registered, the symlinks were seen, and
  // anything taken from them would be in the desired state beside it.
  auto real = ServeDevicePlugin(Socket("real.sock"), "example.com/real");
  ASSERT_TRUE(WaitFor([&] { return real->registered(); }, kWait));
  EXPECT_EQ(lure->get_info_calls(), 0) << "a symlinked socket was dialled";
  EXPECT_EQ(deeper->get_info_calls(), 0) << "a symlinked folder was walked";
  EXPECT_EQ(handler_.RegisteredCount(), 1);
  EXPECT_EQ(watcher_->GetPluginsToRegister().size(), 1U);
}

// gRPC's unix resolver splits a decoded path at ',' and dials the first part: a socket named
// "p.sock,x" would be answered by the plugin at p.sock, registered a second time under another
// socket. The watcher never dials such a name.
TEST_F(HostileRegistryTest, NeverDialsASocketWhoseNameHoldsAComma) {
  const fs::path outside = dir_.Sub("outside");
  fs::create_directories(outside);
  fs::create_directories(Registry());
  // One worker: registrations run in the order their sockets were seen, so once the later
  // plugin is registered the comma's socket has been handled.
  pluginwatcher::WatcherOptions options = Options();
  options.workers = 1;
  StartWatcher(std::move(options));
  auto plugin = ServeDevicePlugin(Socket("p.sock"), "example.com/p");
  ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
  auto decoy = ServeDevicePlugin((outside / "decoy.sock").string(), "example.com/decoy");
  fs::rename(outside / "decoy.sock", Registry() / "p.sock,x");

  auto later = ServeDevicePlugin(Socket("z-later.sock"), "example.com/later");
  ASSERT_TRUE(WaitFor([&] { return later->registered(); }, kWait));
  EXPECT_EQ(plugin->get_info_calls(), 1) << "the comma's first part was dialled";
  EXPECT_EQ(decoy->get_info_calls(), 0);
  EXPECT_EQ(handler_.RegisteredCount(), 2);
  EXPECT_FALSE(InActualState(Socket("p.sock,x")));
}

}  // namespace
}  // namespace devmgr::testing
