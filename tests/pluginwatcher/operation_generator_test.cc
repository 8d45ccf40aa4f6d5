// The registration handshake (upstream's operation_generator.go) against real fake plugins: the
// error texts sent back, handlers per type, retries with back-off, and plugins that are hostile or
// broken, while the watcher keeps serving the others.
#include <gmock/gmock.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "tests/pluginwatcher/watcher_test_env.h"

namespace devmgr::testing {
namespace {

using Kind = HandlerCall::Kind;

class OperationGeneratorTest : public WatcherTestEnv {
 protected:
  // Fast retries, so that back-off shows within a test.
  pluginwatcher::WatcherOptions FastOptions() const {
    auto options = Options();
    options.initial_backoff = absl::Milliseconds(40);
    options.max_backoff = absl::Milliseconds(160);
    return options;
  }

  // Each hostile PluginInfo is refused with a clear reason, and no handler sees it.
  void ExpectRefused(FakeRegistrationPlugin& plugin, const std::string& reason) {
    ASSERT_TRUE(WaitFor([&] { return !plugin.statuses().empty(); }, kWait));
    EXPECT_FALSE(plugin.statuses()[0].plugin_registered());
    EXPECT_EQ(plugin.statuses()[0].error(),
              absl::StrCat("RegisterPlugin error -- plugin validation failed with err: ", reason));
    EXPECT_TRUE(handler_.calls().empty());
  }

  // A well-behaved plugin registers beside a misbehaving one.
  void ExpectOthersStillServed() {
    auto good = ServeDevicePlugin(Socket("good.sock"), "example.com/good");
    EXPECT_TRUE(WaitFor([&] { return good->registered(); }, kWait));
  }
};

TEST_F(OperationGeneratorTest, NoHandlerForTypeUntilTheHostAddsOne) {
  StartWatcher(FastOptions());
  const std::string socket = Socket("csi.sock");
  auto plugin = Serve(socket, MakeInfo(pluginwatcher::kCSIPlugin, "csi.example.com"));
  ASSERT_TRUE(WaitFor([&] { return !plugin->statuses().empty(); }, kWait));
  EXPECT_FALSE(plugin->statuses()[0].plugin_registered());
  EXPECT_EQ(plugin->statuses()[0].error(),
            absl::StrCat("RegisterPlugin error -- no handler registered for plugin type: "
                         "CSIPlugin at socket ",
                         socket));
  EXPECT_FALSE(InActualState(socket));
  EXPECT_TRUE(handler_.calls().empty());

  // The host registers a handler for the type: a retry finds it.
  FakePluginHandler csi;
  watcher_->AddHandler(pluginwatcher::kCSIPlugin, csi);
  ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
  EXPECT_EQ(csi.Count(Kind::kRegister, socket), 1);
  EXPECT_EQ(watcher_->GetRegisteredPlugins().at(0).type, "CSIPlugin");
  plugin->Stop();
  ASSERT_TRUE(WaitFor([&] { return csi.Count(Kind::kDeRegister) == 1; }, kWait));
  watcher_->Stop();  // before `csi` goes
}

TEST_F(OperationGeneratorTest, HandlersPerType) {
  FakePluginHandler dra;
  StartWatcher();
  watcher_->AddHandler(pluginwatcher::kDRAPlugin, dra);
  auto device = ServeDevicePlugin(Socket("device.sock"), "example.com/gpu");
  const std::string dra_endpoint =
      (dir_.path() / "plugins" / "dra.example.com" / "dra.sock").string();
  auto driver =
      Serve(Socket("dra.example.com-reg.sock"),
            MakeInfo(pluginwatcher::kDRAPlugin, "dra.example.com", dra_endpoint, {"v1.DRAPlugin"}));
  ASSERT_TRUE(WaitFor([&] { return device->registered() && driver->registered(); }, kWait));
  EXPECT_EQ(handler_.Count(Kind::kRegister), 1);
  EXPECT_EQ(handler_.Count(Kind::kRegister, dra_endpoint), 0);
  EXPECT_EQ(dra.Count(Kind::kRegister, dra_endpoint), 1);
  EXPECT_EQ(dra.calls().back().versions, std::vector<std::string>{"v1.DRAPlugin"});
  watcher_->Stop();
}

TEST_F(OperationGeneratorTest, ValidationFailureIsRetriedWithBackoff) {
  handler_.SetValidateResult(absl::InvalidArgumentError("boom"));
  StartWatcher(FastOptions());
  const std::string socket = Socket("plugin.sock");
  auto plugin = ServeDevicePlugin(socket, "example.com/r");
  ASSERT_TRUE(WaitFor([&] { return handler_.Count(Kind::kValidate) >= 5; }, kWait));
  EXPECT_EQ(plugin->statuses()[0].error(),
            "RegisterPlugin error -- plugin validation failed with err: boom");
  EXPECT_FALSE(plugin->statuses()[0].plugin_registered());
  EXPECT_EQ(handler_.Count(Kind::kRegister), 0);
  EXPECT_FALSE(InActualState(socket));

  // The waits between attempts double from 40 ms and stop at 160 ms.
  auto calls = handler_.calls();
  const std::vector<absl::Duration> backoff = {absl::Milliseconds(40), absl::Milliseconds(80),
                                               absl::Milliseconds(160), absl::Milliseconds(160)};
  for (size_t i = 0; i < backoff.size(); ++i) {
    EXPECT_GE(calls[i + 1].when - calls[i].when, backoff[i]) << "attempt " << i + 1;
  }

  handler_.SetValidateResult(absl::OkStatus());
  ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
  EXPECT_EQ(handler_.Count(Kind::kRegister), 1);
}

TEST_F(OperationGeneratorTest, RegistrationFailureKeepsThePluginButDoesNotDeregisterIt) {
  handler_.SetRegisterResult(absl::InternalError("no room"));
  StartWatcher(FastOptions());
  const std::string socket = Socket("plugin.sock");
  auto plugin = ServeDevicePlugin(socket, "example.com/r");
  ASSERT_TRUE(WaitFor([&] { return !plugin->statuses().empty(); }, kWait));
  EXPECT_FALSE(plugin->statuses()[0].plugin_registered());
  EXPECT_EQ(plugin->statuses()[0].error(),
            "RegisterPlugin error -- plugin registration failed with err: no room");
  // Upstream adds the plugin to the actual state before RegisterPlugin and leaves it there: no
  // retry until the socket is re-created. Upstream also calls DeRegisterPlugin when it goes,
  // by its name and endpoint, which drops a plugin the handler registered under them from
  // another socket (a DRA driver's endpoint named again by a second socket, refused as
  // "already registered"): here a refused plugin is never deregistered.
  EXPECT_TRUE(InActualState(socket));
  plugin->Stop();
  ASSERT_TRUE(WaitFor([&] { return !InActualState(socket); }, kWait));
  EXPECT_EQ(handler_.Count(Kind::kRegister), 1);

  // One that registers is deregistered when it goes, as ever. The operations of one socket run
  // one after the other, so once it is registered the first one's removal has ended: nothing
  // was deregistered for it.
  handler_.SetRegisterResult(absl::OkStatus());
  plugin = ServeDevicePlugin(socket, "example.com/r");
  ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
  EXPECT_EQ(handler_.Count(Kind::kDeRegister), 0);
  plugin->Stop();
  ASSERT_TRUE(WaitFor([&] { return handler_.Count(Kind::kDeRegister) == 1; }, kWait));
}

// Also upstream's node e2e "must recover and register after registration failure" (a DRA
// driver whose GetInfo fails, then answers): the watcher treats every plugin type alike.
TEST_F(OperationGeneratorTest, PluginNotReadyYetIsRetried) {
  StartWatcher(FastOptions());
  auto plugin = std::make_unique<FakeRegistrationPlugin>(
      Socket("slow.sock"), MakeInfo(pluginwatcher::kDevicePlugin, "example.com/slow"));
  plugin->FailGetInfo(3);
  ASSERT_TRUE(plugin->Serve().ok());
  ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
  EXPECT_EQ(plugin->get_info_calls(), 4);
  EXPECT_EQ(plugin->statuses().size(), 1u);
}

TEST_F(OperationGeneratorTest, EmptyEndpointIsTheRegistrationSocket) {
  StartWatcher();
  const std::string socket = Socket("plugin.sock");
  auto plugin = ServeDevicePlugin(socket, "example.com/r");
  ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
  EXPECT_EQ(handler_.calls().back().endpoint, socket);
}

TEST_F(OperationGeneratorTest, EndpointInPluginsFolderIsAccepted) {
  StartWatcher();
  const std::string endpoint = (dir_.path() / "plugins" / "vendor" / "device.sock").string();
  auto plugin =
      Serve(Socket("reg.sock"), MakeInfo(pluginwatcher::kDevicePlugin, "example.com/r", endpoint));
  ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
  EXPECT_EQ(handler_.calls().back().endpoint, endpoint);
}

// As upstream, the watcher hands any endpoint to the handler, which dials it (and refuses what
// it cannot dial, with its own text: tests/devicemanager/hostile_registration_test.cc).
TEST_F(OperationGeneratorTest, AnyEndpointIsHandedToTheHandler) {
  StartWatcher();
  const std::string long_endpoint = Registry().string() + "/" + std::string(120, 'x');
  const std::string climbing = Registry().string() + "/../../etc/other.sock";
  int served = 0;
  for (const std::string& endpoint :
       {std::string("/run/other.sock"), climbing, std::string("x.sock"), long_endpoint}) {
    auto plugin = Serve(Socket("p" + std::to_string(served++) + ".sock"),
                        MakeInfo(pluginwatcher::kDevicePlugin, "example.com/r", endpoint));
    ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait)) << endpoint;
    // Counted, not read as the last call: the previous plugin, gone with its iteration, may be
    // deregistered after this one registered.
    EXPECT_EQ(handler_.Count(Kind::kRegister, endpoint), 1) << endpoint;
  }
}

TEST_F(OperationGeneratorTest, EndpointWithANulByteIsRefused) {
  StartWatcher();
  const std::string endpoint = Registry().string() + std::string("/a.sock\0/x", 10);
  auto plugin =
      Serve(Socket("nul.sock"), MakeInfo(pluginwatcher::kDevicePlugin, "example.com/r", endpoint));
  ExpectRefused(*plugin, "plugin endpoint contains a NUL byte");
  ExpectOthersStillServed();
}

TEST_F(OperationGeneratorTest, OverLongNameIsRefused) {
  StartWatcher();
  auto plugin = Serve(Socket("long-name.sock"),
                      MakeInfo(pluginwatcher::kDevicePlugin, std::string(10'000, 'n')));
  ExpectRefused(*plugin, "plugin name is 10000 bytes, over the limit of 317");
  ExpectOthersStillServed();
}

TEST_F(OperationGeneratorTest, SocketThatAcceptsAndNeverAnswers) {
  auto options = FastOptions();
  options.dial_timeout = absl::Milliseconds(300);
  options.get_info_timeout = absl::Milliseconds(200);
  std::filesystem::create_directories(Registry());
  HungSocket hung(Socket("hung.sock"));
  ASSERT_TRUE(hung.Listen().ok());
  StartWatcher(options);
  // It is tried again and again, with back-off, and never gets into the actual state.
  // Each attempt connects twice: the check that someone listens, then gRPC's dial.
  ASSERT_TRUE(WaitFor([&] { return hung.accepted() >= 4; }, kWait));
  EXPECT_FALSE(InActualState(Socket("hung.sock")));
  ExpectOthersStillServed();
  EXPECT_EQ(handler_.Count(Kind::kValidate, Socket("hung.sock")), 0);
}

// Sockets left by plugins that are gone (bound, never listened on again) are refused at once:
// the watcher gives up on each within a second instead of dialling it for the whole dial
// timeout, so that as many of them as it has workers do not keep a live plugin waiting.
TEST_F(OperationGeneratorTest, SocketsNobodyListensOnDoNotHoldTheWorkers) {
  auto options = FastOptions();
  options.dial_timeout = absl::Minutes(1);
  std::filesystem::create_directories(Registry());
  for (int i = 0; i < options.workers; ++i) {
    const std::string path = Socket(absl::StrCat("gone-", i, ".sock"));
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    path.copy(address.sun_path, sizeof(address.sun_path) - 1);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API takes sockaddr*
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    ::close(fd);
  }
  StartWatcher(options);
  ASSERT_TRUE(WaitFor([&] { return InDesiredState(Socket("gone-0.sock")); }, kWait));
  ExpectOthersStillServed();
  EXPECT_FALSE(InActualState(Socket("gone-0.sock")));
}

// A plugin that replaces its socket (unlink, bind anew) just after the watcher saw it listen:
// the socket opened is dead, so the dial leaves it at its first failed connection and reaches
// the new socket at once, as upstream's dial of the path does. Before, gRPC went on connecting
// to the dead socket until the dial timeout (30 s here), and the new one waited for it.
TEST_F(OperationGeneratorTest, APluginThatReplacesItsSocketWhileDialledRegistersAtOnce) {
  auto options = FastOptions();
  options.dial_timeout = absl::Seconds(30);
  std::filesystem::create_directories(Registry());
  auto old = std::make_unique<HungSocket>(Socket("p.sock"));
  ASSERT_TRUE(old->Listen().ok());
  StartWatcher(options);
  // The check that someone listens; gRPC connects next, to this socket, which now closes with
  // every connection and leaves its name to the new one.
  ASSERT_TRUE(WaitFor([&] { return old->accepted() >= 1; }, kWait));
  old.reset();
  auto plugin = ServeDevicePlugin(Socket("p.sock"), "example.com/p");
  ASSERT_TRUE(WaitFor([&] { return plugin->registered(); }, std::chrono::seconds(5)));
  EXPECT_TRUE(WaitFor([&] { return InActualState(Socket("p.sock")); }, kWait));
}

// Upstream runs each socket's operation on a goroutine of its own: plugins whose handler calls
// hang (here five, in ValidatePlugin) hold up no other plugin's registration. Before, four
// worker threads were all there was, and a fifth plugin waited for one of them.
TEST_F(OperationGeneratorTest, PluginsWhoseHandlerCallsHangDoNotHoldUpOthers) {
  constexpr int kHung = 5;
  struct Held {
    std::atomic<int> calls{0};
    absl::Notification release;
  };
  auto held = std::make_shared<Held>();
  handler_.OnValidate([held] {
    if (held->calls.fetch_add(1) < kHung) held->release.WaitForNotification();
  });
  const absl::Cleanup release = [held] {
    if (!held->release.HasBeenNotified()) held->release.Notify();
  };
  StartWatcher();
  std::vector<std::unique_ptr<FakeRegistrationPlugin>> hung;
  for (int i = 0; i < kHung; ++i) {
    hung.push_back(ServeDevicePlugin(Socket(absl::StrCat("hung-", i, ".sock")),
                                     absl::StrCat("example.com/hung-", i)));
  }
  ASSERT_TRUE(WaitFor([&] { return held->calls.load() >= kHung; }, kWait))
      << held->calls.load() << " of " << kHung << " plugins reached ValidatePlugin";
  ExpectOthersStillServed();

  held->release.Notify();
  for (const auto& plugin : hung) {
    EXPECT_TRUE(WaitFor([&] { return plugin->registered(); }, kWait));
  }
}

TEST_F(OperationGeneratorTest, StopCancelsADialInProgress) {
  std::filesystem::create_directories(Registry());
  HungSocket hung(Socket("hung.sock"));
  ASSERT_TRUE(hung.Listen().ok());
  StartWatcher();  // upstream's 10 s dial deadline
  ASSERT_TRUE(WaitFor([&] { return hung.accepted() >= 1; }, kWait));
  const absl::Time start = absl::Now();
  watcher_->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST_F(OperationGeneratorTest, StopCancelsAGetInfoInProgress) {
  auto options = Options();
  options.get_info_timeout = absl::Seconds(10);
  StartWatcher(options);
  FakeRegistrationPlugin stuck(Socket("stuck.sock"),
                               MakeInfo(pluginwatcher::kDevicePlugin, "example.com/stuck"));
  stuck.HangGetInfo();
  ASSERT_TRUE(stuck.Serve().ok());
  ASSERT_TRUE(WaitFor([&] { return stuck.get_info_calls() >= 1; }, kWait));
  const absl::Time start = absl::Now();
  watcher_->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_TRUE(handler_.calls().empty());
}

// The notification fails at once when the plugin is gone, as upstream's call without
// WaitForReady: the deregistration does not wait for the notify deadline (a minute here).
// Before, the call waited for the connection to come back until its deadline.
TEST_F(OperationGeneratorTest, PluginCrashesBetweenGetInfoAndNotification) {
  auto options = FastOptions();
  options.notify_timeout = absl::Minutes(1);
  StartWatcher(options);
  const std::string socket = Socket("crash.sock");
  auto plugin = ServeDevicePlugin(socket, "example.com/crash");
  handler_.OnValidate([&] {
    handler_.OnValidate(nullptr);
    plugin->Stop();  // the plugin dies after it answered GetInfo
  });
  // The handler saw it registered; the notification fails; its socket is gone, so it is
  // deregistered.
  ASSERT_TRUE(WaitFor([&] { return handler_.Count(Kind::kDeRegister, socket) == 1; }, kWait));
  EXPECT_EQ(handler_.Count(Kind::kRegister, socket), 1);
  EXPECT_TRUE(plugin->statuses().empty());
  ExpectOthersStillServed();
}

}  // namespace
}  // namespace devmgr::testing
