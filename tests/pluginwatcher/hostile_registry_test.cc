// Hostile names in plugins_registry: symlinks, one to a registration socket outside and one to
// a folder outside that holds a socket, which the watcher never dials through, whether the
// symlink was there at Start, appears later, is renamed over a plugin's socket, or takes a
// socket's or a folder's place while a dial waits, while a real plugin beside them registers as
// usual; a regular file renamed over a plugin's socket; and a socket whose name gRPC would dial
// as another's.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "tests/pluginwatcher/watcher_test_env.h"

namespace devmgr::testing {
namespace {

namespace fs = std::filesystem;
using Kind = HandlerCall::Kind;
using HostileRegistryTest = WatcherTestEnv;

// How long a test waits for what must not happen: many times the back-offs and dial timeouts
// the tests below set.
constexpr auto kNever = std::chrono::seconds(2);

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

// A name renamed over an existing one brings no IN_DELETE for the socket it replaces, only
// IN_MOVED_TO. A symlink renamed over a plugin's socket takes the socket out of the desired
// state, and the plugin it links to is never dialled, however often the socket's back-off ends.
// Before, the socket's entry stayed, and its next attempt dialled through the symlink: the
// plugin outside was asked GetInfo (and registered, had it been a device plugin's type).
TEST_F(HostileRegistryTest, NeverDialsASymlinkRenamedOverASocket) {
  const fs::path outside = dir_.Sub("outside");
  fs::create_directories(outside);
  pluginwatcher::WatcherOptions options = Options();
  options.initial_backoff = absl::Milliseconds(50);
  options.max_backoff = absl::Milliseconds(50);
  StartWatcher(std::move(options));
  auto lure = ServeDevicePlugin((outside / "lure.sock").string(), "example.com/lure");
  // Not ready for as long as the test runs: its socket stays in the desired state, tried again
  // after each back-off.
  auto plugin = std::make_unique<FakeRegistrationPlugin>(
      Socket("p.sock"), MakeInfo(pluginwatcher::kDevicePlugin, "example.com/p"));
  plugin->FailGetInfo(1'000'000);
  ASSERT_TRUE(plugin->Serve().ok());
  ASSERT_TRUE(WaitFor([&] { return plugin->get_info_calls() >= 2; }, kWait));

  fs::create_symlink(outside / "lure.sock", Registry() / ".swap");
  fs::rename(Registry() / ".swap", Socket("p.sock"));
  EXPECT_FALSE(WaitFor([&] { return lure->get_info_calls() > 0; }, kNever))
      << "the symlink renamed over the socket was dialled";
  EXPECT_TRUE(WaitFor([&] { return !InDesiredState(Socket("p.sock")); }, kWait));
  EXPECT_FALSE(InActualState(Socket("p.sock")));
  EXPECT_EQ(handler_.calls().size(), 0U);
}

// A regular file renamed over a registered plugin's socket: the plugin is deregistered, once.
// Before, the socket's entry stayed in the desired state and the plugin stayed registered.
TEST_F(HostileRegistryTest, AFileRenamedOverARegisteredSocketDeregistersIt) {
  StartWatcher();
  auto plugin = ServeDevicePlugin(Socket("p.sock"), "example.com/p");
  ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
  std::ofstream(Registry() / ".swap") << "not a socket";
  fs::rename(Registry() / ".swap", Socket("p.sock"));
  ASSERT_TRUE(WaitFor([&] { return handler_.Count(Kind::kDeRegister) == 1; }, kWait));
  EXPECT_FALSE(WaitFor([&] { return handler_.Count(Kind::kDeRegister) > 1; }, kNever));
  EXPECT_EQ(handler_.RegisteredCount(), 0);
  EXPECT_TRUE(watcher_->GetPluginsToRegister().empty());
  EXPECT_EQ(plugin->get_info_calls(), 1);
}

// A dial waits on a socket that accepts and never answers; meanwhile a symlink leading to a
// plugin outside takes the socket's place or its folder's, and the socket closes its
// connections, so that gRPC connects again. The new connection reaches the socket first dialled
// (no one listens there now, so the dial fails), never the plugin outside. Before, every connect
// resolved the path afresh, and the plugin outside answered the handshake.
class WaitingDialTest : public HostileRegistryTest {
 protected:
  void SetUp() override {
    fs::create_directories(outside_);
    lure_ = ServeDevicePlugin((outside_ / "p.sock").string(), "example.com/lure");
    pluginwatcher::WatcherOptions options = Options();
    options.dial_timeout = absl::Milliseconds(800);
    options.initial_backoff = absl::Milliseconds(50);
    options.max_backoff = absl::Milliseconds(50);
    StartWatcher(std::move(options));
  }

  // The socket is bound at `hidden` (where the watcher does not look, and where nothing is left
  // to remove once the test is done: a socket's removal looks at its path, through the symlink),
  // `place` moves it where the watcher dials it, and `plant` puts the symlink in.
  void ExpectPlantedSymlinkNeverReached(const fs::path& hidden, const std::function<void()>& place,
                                        const std::function<void()>& plant) {
    auto hung = std::make_unique<HungSocket>(hidden);
    ASSERT_TRUE(hung->Listen().ok());
    place();
    // The check that someone listens, then gRPC's connection, which waits for an answer.
    ASSERT_TRUE(WaitFor([&] { return hung->accepted() >= 2; }, kWait));
    plant();
    hung.reset();
    EXPECT_FALSE(WaitFor([&] { return lure_->get_info_calls() > 0; }, kNever))
        << "a dial in progress reached the symlink planted on its path";
    EXPECT_EQ(handler_.calls().size(), 0U);
  }

  const fs::path outside_ = dir_.Sub("outside");
  std::unique_ptr<FakeRegistrationPlugin> lure_;
};

TEST_F(WaitingDialTest, ASymlinkRenamedOverTheSocketIsNotReached) {
  ExpectPlantedSymlinkNeverReached(
      Registry() / ".hung.sock", [&] { fs::rename(Registry() / ".hung.sock", Socket("p.sock")); },
      [&] {
        fs::create_symlink(outside_ / "p.sock", Registry() / ".swap");
        fs::rename(Registry() / ".swap", Socket("p.sock"));
      });
}

TEST_F(WaitingDialTest, AFolderSwappedForASymlinkIsNotWalkedThrough) {
  fs::create_directories(Registry() / ".staging");
  ExpectPlantedSymlinkNeverReached(
      Registry() / ".staging" / "p.sock",
      [&] { fs::rename(Registry() / ".staging", Registry() / "f"); },
      [&] {
        fs::rename(Registry() / "f", Registry() / ".f-old");
        fs::create_symlink(outside_, Registry() / "f");
      });
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
