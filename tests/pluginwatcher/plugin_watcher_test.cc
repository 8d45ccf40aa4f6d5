// The plugin watcher's discovery: upstream's plugin_watcher_test.go by name, then sub-folders,
// ignored names, moves, the registry folder's deletion, a burst of 100 plugins, a plugin that comes
// and goes 200 times, and Stop.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/pluginwatcher/watcher_test_env.h"

namespace devmgr::testing {
namespace {

using Kind = HandlerCall::Kind;

using PluginWatcherTest = WatcherTestEnv;

int CountEntries(const char* folder) {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(folder)) ++n;
  return n;
}
int OpenFds() { return CountEntries("/proc/self/fd"); }

std::string ThreadName(const std::filesystem::path& task) {
  std::string name;
  std::getline(std::ifstream(task / "comm"), name);
  return name;
}

// The threads of ours: a std::thread keeps the process's name, while gRPC names each of its own
// (timers, executors, a server's pollers) and grows and shrinks those pools as load comes and goes,
// so they cannot be counted on to come back to a number.
int Threads() {
  const std::string process = ThreadName("/proc/self");
  int n = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    if (ThreadName(task.path()) == process) ++n;
  }
  return n;
}

// Every thread's name, for a failure's message.
std::string ThreadNames() {
  std::string names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    absl::StrAppend(&names, names.empty() ? "" : ", ", ThreadName(task.path()));
  }
  return names;
}

TEST_F(PluginWatcherTest, TestPluginRegistration) {
  StartWatcher();
  for (int i = 0; i < 10; ++i) {
    const std::string socket = Socket(absl::StrCat("plugin-", i, ".sock"));
    const std::string name = absl::StrCat("example-plugin-", i);
    auto plugin = ServeDevicePlugin(socket, name);
    ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait)) << socket;
    EXPECT_EQ(watcher_->GetPluginsToRegister().size(), 1u);
    EXPECT_EQ(handler_.Count(Kind::kRegister, socket), 1);

    // The plugin stops; it leaves the desired state and is deregistered with its handler.
    plugin->Stop();
    ASSERT_TRUE(WaitFor([&] { return handler_.Count(Kind::kDeRegister, socket) == 1; }, kWait));
    EXPECT_TRUE(watcher_->GetPluginsToRegister().empty());
    EXPECT_TRUE(watcher_->GetRegisteredPlugins().empty());
    EXPECT_EQ(handler_.calls().back().name, name);
  }
}

TEST_F(PluginWatcherTest, TestPluginRegistrationSameName) {
  StartWatcher();
  // Ten plugins of one name and type on different sockets: all are kept and registered.
  std::vector<std::unique_ptr<FakeRegistrationPlugin>> plugins;
  for (int i = 0; i < 10; ++i) {
    const std::string socket = Socket(absl::StrCat("plugin-", i, ".sock"));
    plugins.push_back(ServeDevicePlugin(socket, "dep-example-plugin"));
    ASSERT_TRUE(WaitFor([&] { return plugins.back()->registered(); }, kWait));
    EXPECT_EQ(watcher_->GetPluginsToRegister().size(), static_cast<size_t>(i + 1));
  }
  EXPECT_EQ(handler_.RegisteredCount(), 10);
}

TEST_F(PluginWatcherTest, TestPluginReRegistration) {
  StartWatcher();
  const std::string socket = Socket("plugin-reregistration.sock");
  auto plugin = ServeDevicePlugin(socket, "reregister-plugin");
  ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
  absl::Time last_timestamp = watcher_->GetPluginsToRegister().at(0).timestamp;

  // Remove the plugin and create it again under another name, ten times: the new one replaces
  // the old in the desired state, with a later timestamp.
  for (int i = 0; i < 10; ++i) {
    plugin->Stop();
    ASSERT_TRUE(WaitFor([&] { return !InDesiredState(socket); }, kWait));
    const std::string name = absl::StrCat("dep-example-plugin-", i);
    plugin = ServeDevicePlugin(socket, name);
    ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
    auto desired = watcher_->GetPluginsToRegister();
    ASSERT_EQ(desired.size(), 1u);
    EXPECT_GT(desired[0].timestamp, last_timestamp);
    last_timestamp = desired[0].timestamp;
    ASSERT_TRUE(WaitFor([&] { return handler_.RegisteredCount() == 1; }, kWait));
    EXPECT_EQ(watcher_->GetRegisteredPlugins().at(0).name, name);
  }
}

TEST_F(PluginWatcherTest, TestPluginRegistrationAtKubeletStart) {
  std::filesystem::create_directories(Registry());
  std::vector<std::unique_ptr<FakeRegistrationPlugin>> plugins;
  for (int i = 0; i < 10; ++i) {
    plugins.push_back(ServeDevicePlugin(Socket(absl::StrCat("plugin-", i, ".sock")),
                                        absl::StrCat("example-plugin-", i)));
  }
  StartWatcher();
  for (const auto& plugin : plugins) {
    EXPECT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait)) << plugin->socket_path();
  }
  EXPECT_EQ(watcher_->GetPluginsToRegister().size(), 10u);
  EXPECT_EQ(handler_.RegisteredCount(), 10);
}

TEST_F(PluginWatcherTest, CreatesRegistryFolder) {
  ASSERT_FALSE(std::filesystem::exists(Registry()));
  StartWatcher();
  EXPECT_TRUE(std::filesystem::is_directory(Registry()));
  EXPECT_EQ(std::filesystem::status(Registry()).permissions(), std::filesystem::perms(0755));
}

TEST_F(PluginWatcherTest, KeepsTheModeOfAnExistingRegistryFolder) {
  std::filesystem::create_directories(Registry());
  std::filesystem::permissions(Registry(), std::filesystem::perms(0750));
  StartWatcher();
  EXPECT_EQ(std::filesystem::status(Registry()).permissions(), std::filesystem::perms(0750));
}

// A registry path that is not a folder fails Start with upstream's words ("error (re-)creating
// root"), so that `devmgr serve` refuses to start; the kubelet logs the same error and runs on
// without its plugin manager (README.md, "on purpose").
TEST_F(PluginWatcherTest, ARegistryPathThatIsNotAFolderFailsStart) {
  std::ofstream(Registry()) << "not a folder";
  watcher_ = pluginwatcher::CreateWatcher(Options());
  const absl::Status started = watcher_->Start();
  EXPECT_FALSE(started.ok());
  EXPECT_TRUE(
      absl::StrContains(started.message(), "error (re-)creating root " + Registry().string()))
      << started;
}

TEST_F(PluginWatcherTest, SocketsInSubFolders) {
  std::filesystem::create_directories(Registry() / "old" / "deeper");
  auto at_start = ServeDevicePlugin(Socket("old/deeper/a.sock"), "example.com/a");
  StartWatcher();
  ASSERT_TRUE(WaitFor([&] { return at_start->registered(); }, kWait));

  // A folder created later is watched as well, at any depth.
  std::filesystem::create_directories(Registry() / "new" / "deeper");
  auto later = ServeDevicePlugin(Socket("new/deeper/b.sock"), "example.com/b");
  ASSERT_TRUE(WaitFor([&] { return later->registered(); }, kWait));

  // A folder that goes away takes its plugins along.
  later->Stop();
  std::filesystem::remove_all(Registry() / "new");
  at_start->Stop();
  std::filesystem::remove_all(Registry() / "old");
  ASSERT_TRUE(WaitFor([&] { return handler_.RegisteredCount() == 0; }, kWait));
  EXPECT_TRUE(watcher_->GetPluginsToRegister().empty());
}

// A folder moved out of the registry takes the plugins under it along, and only those: a socket
// whose name extends the folder's ("foo.sock" beside "foo/") stays.
TEST_F(PluginWatcherTest, AFolderMovedOutTakesOnlyWhatIsUnderIt) {
  std::filesystem::create_directories(Registry() / "foo");
  auto inside = ServeDevicePlugin(Socket("foo/a.sock"), "example.com/a");
  auto beside = ServeDevicePlugin(Socket("foo.sock"), "example.com/b");
  StartWatcher();
  ASSERT_TRUE(WaitFor([&] { return inside->registered() && beside->registered(); }, kWait));
  std::filesystem::rename(Registry() / "foo", dir_.Sub("moved-away"));
  ASSERT_TRUE(WaitFor([&] { return handler_.Count(Kind::kDeRegister) == 1; }, kWait));
  auto desired = watcher_->GetPluginsToRegister();
  ASSERT_EQ(desired.size(), 1u);
  EXPECT_EQ(desired[0].socket_path, Socket("foo.sock"));
  EXPECT_EQ(handler_.RegisteredCount(), 1);
}

TEST_F(PluginWatcherTest, IgnoresDotFilesAndNonSockets) {
  std::filesystem::create_directories(Registry() / ".hidden-dir");
  auto in_hidden_dir = ServeDevicePlugin(Socket(".hidden-dir/a.sock"), "example.com/a");
  StartWatcher();
  auto hidden = ServeDevicePlugin(Socket(".hidden.sock"), "example.com/hidden");
  std::ofstream(Socket("not-a-socket.sock")) << "x";
  std::filesystem::create_directories(Registry() / ".later-hidden-dir");
  auto in_later_hidden_dir = ServeDevicePlugin(Socket(".later-hidden-dir/b.sock"), "example.com/b");
  // A visible plugin, created after the others, registers; none of the others is even seen.
  auto visible = ServeDevicePlugin(Socket("visible.sock"), "example.com/visible");
  ASSERT_TRUE(WaitFor([&] { return visible->registered(); }, kWait));
  auto desired = watcher_->GetPluginsToRegister();
  ASSERT_EQ(desired.size(), 1u);
  EXPECT_EQ(desired[0].socket_path, Socket("visible.sock"));
  EXPECT_EQ(hidden->get_info_calls(), 0);
  EXPECT_EQ(in_hidden_dir->get_info_calls(), 0);
  EXPECT_EQ(in_later_hidden_dir->get_info_calls(), 0);
}

TEST_F(PluginWatcherTest, SocketMovedInAndOut) {
  StartWatcher();
  // Plugins that bind a hidden name and rename it into place are seen at the rename.
  auto plugin = ServeDevicePlugin(Socket(".tmp.sock"), "example.com/moved");
  std::filesystem::rename(Socket(".tmp.sock"), Socket("moved.sock"));
  ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
  EXPECT_EQ(watcher_->GetRegisteredPlugins().at(0).socket_path, Socket("moved.sock"));

  std::filesystem::rename(Socket("moved.sock"), Socket(".gone.sock"));
  ASSERT_TRUE(WaitFor([&] { return handler_.Count(Kind::kDeRegister) == 1; }, kWait));
  std::filesystem::remove(Socket(".gone.sock"));
}

TEST_F(PluginWatcherTest, RegistryFolderDeletedAndRecreated) {
  StartWatcher();
  auto first = ServeDevicePlugin(Socket("first.sock"), "example.com/first");
  ASSERT_TRUE(WaitFor([&] { return first->registered(); }, kWait));
  std::filesystem::remove_all(Registry());
  ASSERT_TRUE(WaitFor([&] { return handler_.Count(Kind::kDeRegister) == 1; }, kWait));
  first->Stop();

  // The watcher creates the folder again and keeps watching it.
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::is_directory(Registry()); }, kWait));
  auto second = ServeDevicePlugin(Socket("second.sock"), "example.com/second");
  ASSERT_TRUE(WaitFor([&] { return second->registered(); }, kWait));
}

// A registry path given with a trailing '/' is the same folder: when it is deleted, its plugins
// are deregistered. Before, the '/' stayed in the watcher's path and the search for what lay
// under the deleted folder ("plugins_registry//") found nothing: every plugin stayed registered.
TEST_F(PluginWatcherTest, ARegistryPathWithATrailingSlashIsDeletedAndRecreatedAsWithout) {
  pluginwatcher::WatcherOptions options = Options();
  options.registry_dir = Registry().string() + "/";
  StartWatcher(std::move(options));
  auto plugin = ServeDevicePlugin(Socket("p.sock"), "example.com/p");
  ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
  EXPECT_TRUE(InActualState(Socket("p.sock")));
  std::filesystem::remove_all(Registry());
  ASSERT_TRUE(WaitFor([&] { return handler_.Count(Kind::kDeRegister) == 1; }, kWait));
  EXPECT_TRUE(watcher_->GetPluginsToRegister().empty());
  plugin->Stop();
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::is_directory(Registry()); }, kWait));
  auto again = ServeDevicePlugin(Socket("again.sock"), "example.com/again");
  ASSERT_TRUE(WaitFor([&] { return again->registered(); }, kWait));
}

TEST_F(PluginWatcherTest, HundredPluginsAtOnce) {
  StartWatcher();
  std::vector<std::unique_ptr<FakeRegistrationPlugin>> plugins;
  for (int i = 0; i < 100; ++i) {
    plugins.push_back(
        ServeDevicePlugin(Socket(absl::StrCat("p", i, ".sock")), absl::StrCat("example.com/r", i)));
  }
  ASSERT_TRUE(WaitFor([&] { return handler_.RegisteredCount() == 100; }, kWait))
      << handler_.RegisteredCount();
  for (const auto& plugin : plugins) {
    EXPECT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait)) << plugin->socket_path();
    EXPECT_EQ(plugin->statuses().size(), 1u);
  }
  EXPECT_EQ(watcher_->GetRegisteredPlugins().size(), 100u);
}

TEST_F(PluginWatcherTest, PluginComesAndGoes200Times) {
  StartWatcher();
  const std::string socket = Socket("flapping.sock");
  auto cycle = [&](int i) {
    auto plugin = ServeDevicePlugin(socket, "example.com/flapping");
    ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait)) << "cycle " << i;
    plugin->Stop();
    ASSERT_TRUE(WaitFor([&] { return handler_.RegisteredCount() == 0; }, kWait)) << "cycle " << i;
  };
  // One cycle first, so that gRPC's lazily started threads count as the baseline.
  cycle(-1);
  const int fds_before = OpenFds();
  const int threads_before = Threads();
  for (int i = 0; i < 200; ++i) {
    cycle(i);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(handler_.Count(Kind::kRegister), 201);
  EXPECT_EQ(handler_.Count(Kind::kDeRegister), 201);
  // Descriptors and threads go back to where they were (gRPC closes some a moment later).
  EXPECT_TRUE(WaitFor([&] { return OpenFds() <= fds_before; }, kWait))
      << OpenFds() << " open descriptors, " << fds_before << " before";
  EXPECT_TRUE(WaitFor([&] { return Threads() <= threads_before; }, kWait))
      << Threads() << " threads, " << threads_before << " before; all: " << ThreadNames();
}

TEST_F(PluginWatcherTest, StopLeavesPluginsRegisteredAndReleasesEverything) {
  std::filesystem::create_directories(Registry());
  auto plugin = ServeDevicePlugin(Socket("a.sock"), "example.com/a");
  // Warm gRPC's own threads up before counting.
  {
    StartWatcher();
    ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
    watcher_->Stop();
    watcher_.reset();
  }
  const int fds_before = OpenFds();
  const int threads_before = Threads();
  StartWatcher();
  ASSERT_TRUE(WaitFor([&] { return handler_.Count(Kind::kRegister) == 2; }, kWait));
  watcher_->Stop();
  watcher_->Stop();  // idempotent
  EXPECT_EQ(handler_.Count(Kind::kDeRegister), 0);
  EXPECT_TRUE(WaitFor([&] { return OpenFds() <= fds_before; }, kWait))
      << OpenFds() << " open descriptors, " << fds_before << " before";
  EXPECT_TRUE(WaitFor([&] { return Threads() <= threads_before; }, kWait))
      << Threads() << " threads, " << threads_before << " before; all: " << ThreadNames();
}

}  // namespace
}  // namespace devmgr::testing
