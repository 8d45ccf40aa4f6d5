// Symlinks planted in plugins_registry: one to a registration socket outside, one to a folder
// outside that holds a socket. The watcher never dials through either, whether the symlink was
// there at Start or appears later, while a real plugin beside them registers as usual.
#include <filesystem>
#include <memory>
#include <string>

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

}  // namespace
}  // namespace devmgr::testing
