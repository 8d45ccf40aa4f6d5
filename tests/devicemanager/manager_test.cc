// The Manager against real gRPC fake plugins on temporary unix sockets, with a fake clock for
// the grace period. Upstream scenarios from manager_test.go keep their names.
#include "devicemanager/manager.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "checkpoint/checkpoint.h"
#include "common/file_store.h"
#include "common/unix_socket.h"
#include "devicemanager/checkpoint_store_impl.h"
#include "devicemanager/manager_impl.h"
#include "devicemanager/metrics.h"
#include "tests/devicemanager/fake_endpoint.h"
#include "tests/testlib/at_once.h"
#include "tests/testlib/fake_clock.h"
#include "tests/testlib/fake_device_plugin.h"
#include "tests/testlib/listening_socket.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::devicemanager {
namespace {

using ::devmgr::testing::FakeClock;
using ::devmgr::testing::FakeDevicePlugin;
using ::devmgr::testing::FakeEndpoint;
using ::devmgr::testing::FakeEndpointFactory;
using ::devmgr::testing::ListeningSocket;
using ::devmgr::testing::MakeDevice;
using ::devmgr::testing::MakeDevices;
using ::devmgr::testing::RunAtOnce;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;
using PluginPtr = std::unique_ptr<FakeDevicePlugin>;

constexpr char kResource[] = "fake-domain/resource";
constexpr char kResource1[] = "domain1.com/resource1";
constexpr char kResource2[] = "domain2.com/resource2";

// Counts the Register requests kubelet.sock received.
class RegistrationCounter final : public ManagerMetrics {
 public:
  void PluginRegistered(absl::string_view /*resource_name*/) override { ++registrations_; }
  int registrations() const { return registrations_.load(); }

 private:
  std::atomic<int> registrations_{0};
};

// Connects a FakeEndpoint only once the manager has begun to stop (its dials cancelled), so
// that the manager refuses a plugin whose dial and handshake succeeded; keeps a weak reference
// to it.
class DialDoneDuringStop final : public EndpointFactory {
 public:
  absl::StatusOr<EndpointSharedPtr> Connect(std::string resource_name, std::filesystem::path socket,
                                            EndpointCallbacks& callbacks,
                                            const ConnectLimits& limits) override {
    dialing_.Notify();
    if (!WaitFor([&] { return limits.cancelled->load(); })) {
      return absl::DeadlineExceededError("the manager did not stop");
    }
    auto endpoint = std::make_shared<::devmgr::testing::FakeEndpoint>(
        std::move(resource_name), std::move(socket), v1beta1::DevicePluginOptions(), callbacks);
    absl::MutexLock lock(&mu_);
    connected_ = endpoint;
    return endpoint;
  }
  absl::Notification& dialing() { return dialing_; }
  std::weak_ptr<Endpoint> connected() const {
    absl::MutexLock lock(&mu_);
    return connected_;
  }

 private:
  absl::Notification dialing_;
  mutable absl::Mutex mu_;
  std::weak_ptr<Endpoint> connected_ ABSL_GUARDED_BY(mu_);
};

// Holds the first Connect until released (a hung plugin on the one connect thread), and keeps
// each dial deadline it is given, by socket name.
class HoldsTheFirstDial final : public EndpointFactory {
 public:
  absl::StatusOr<EndpointSharedPtr> Connect(std::string resource_name, std::filesystem::path socket,
                                            EndpointCallbacks& callbacks,
                                            const ConnectLimits& limits) override {
    bool first = false;
    {
      absl::MutexLock lock(&mu_);
      deadlines_[socket.filename().string()] = limits.dial_deadline;
      first = deadlines_.size() == 1;
    }
    if (first) {
      holding_.Notify();
      released_.WaitForNotification();
    }
    return std::make_shared<::devmgr::testing::FakeEndpoint>(
        std::move(resource_name), std::move(socket), v1beta1::DevicePluginOptions(), callbacks);
  }
  absl::Notification& holding() { return holding_; }
  void Release() { released_.Notify(); }
  std::optional<absl::Time> deadline(const std::string& socket) const {
    absl::MutexLock lock(&mu_);
    auto it = deadlines_.find(socket);
    return it == deadlines_.end() ? std::nullopt : std::optional<absl::Time>(it->second);
  }

 private:
  absl::Notification holding_;
  absl::Notification released_;
  mutable absl::Mutex mu_;
  std::map<std::string, absl::Time> deadlines_ ABSL_GUARDED_BY(mu_);
};

class ManagerTest : public ::testing::Test {
 protected:
  ManagerOptions Options() {
    ManagerOptions options;
    options.plugin_dir = dir_.path();
    options.clock = &clock_;
    options.dial_timeout = absl::Seconds(5);
    options.plugin_call_timeout = absl::Seconds(5);
    options.checkpoint_write_delay = absl::Milliseconds(1);
    options.metrics = &registrations_;
    return options;
  }

  void StartManager() { StartManager(Options()); }
  void StartManager(ManagerOptions options) {
    manager_ = std::make_unique<ManagerImpl>(std::move(options));
    ASSERT_TRUE(
        manager_->Start([] { return std::vector<std::string>(); }, [] { return true; }).ok());
  }

  PluginPtr StartPlugin(const std::string& socket_name, const std::string& resource,
                        std::vector<v1beta1::Device> devices,
                        FakeDevicePlugin::Options options = {}) {
    auto plugin = std::make_unique<FakeDevicePlugin>(dir_.Sub(socket_name), resource,
                                                     std::move(devices), options);
    EXPECT_TRUE(plugin->Start().ok());
    return plugin;
  }

  std::filesystem::path KubeletSocket() const { return dir_.Sub("kubelet.sock"); }

  // Starts the manager on fakes_ and registers in probe mode a FakeEndpoint of kResource1 at
  // each of `sockets` (files put there), returned in that order.
  std::vector<std::shared_ptr<FakeEndpoint>> StartWithFakes(const std::vector<std::string>& sockets,
                                                            bool preferred_allocation = false) {
    ManagerOptions options = Options();
    options.endpoint_factory = &fakes_;
    StartManager(std::move(options));
    v1beta1::DevicePluginOptions plugin_options;
    plugin_options.set_get_preferred_allocation_available(preferred_allocation);
    fakes_.set_plugin_options(plugin_options);
    std::vector<std::shared_ptr<FakeEndpoint>> endpoints;
    for (const std::string& socket : sockets) {
      socket_files_.push_back(std::make_unique<ListeningSocket>(dir_.Sub(socket)));
      EXPECT_TRUE(socket_files_.back()->listening()) << socket;
      endpoints.push_back(RegisterFake(socket));
    }
    return endpoints;
  }
  // Registers `plugin` in probe mode, as the plugin watcher does for a socket in plugins_registry.
  absl::Status RegisterProbe(const FakeDevicePlugin& plugin) {
    return manager_->RegisterPlugin(plugin.resource_name(), plugin.socket().string(), {"v1beta1"});
  }
  std::shared_ptr<FakeEndpoint> RegisterFake(const std::string& socket) {
    EXPECT_TRUE(manager_->RegisterPlugin(kResource1, dir_.Sub(socket).string(), {"v1beta1"}).ok());
    return fakes_.endpoint(kResource1);
  }

  // -1 when the resource is not reported.
  int64_t Capacity(const std::string& resource) {
    CapacityResult result = manager_->GetCapacity();
    auto it = result.capacity.find(resource);
    return it == result.capacity.end() ? -1 : it->second;
  }
  int64_t Allocatable(const std::string& resource) {
    CapacityResult result = manager_->GetCapacity();
    auto it = result.allocatable.find(resource);
    return it == result.allocatable.end() ? -1 : it->second;
  }
  bool WaitForCapacity(const std::string& resource, int64_t capacity, int64_t allocatable,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return WaitFor(
        [&] {
          CapacityResult result = manager_->GetCapacity();
          return result.capacity[resource] == capacity &&
                 result.allocatable[resource] == allocatable;
        },
        timeout);
  }

  absl::StatusOr<checkpoint::CheckpointData> ReadCheckpoint() const {
    auto bytes = ReadWholeFile(dir_.Sub(std::string(checkpoint::kCheckpointFileName)));
    if (!bytes.ok()) return bytes.status();
    return checkpoint::Decode(*bytes);
  }

  TempDir dir_;
  FakeClock clock_;
  // In-memory endpoints, for tests that start the manager with them (FakeEndpoints).
  FakeEndpointFactory fakes_;
  std::vector<std::unique_ptr<ListeningSocket>> socket_files_;
  RegistrationCounter registrations_;  // before manager_, which points to it
  std::unique_ptr<ManagerImpl> manager_;
};

TEST_F(ManagerTest, TestNewManagerImpl) {
  ManagerOptions options = Options();
  options.plugin_dir = "";
  ManagerImpl manager(options);
  absl::Status status = manager.Start(nullptr, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(status.message(), "bad socketPath, must be an absolute path: "))
      << status;
  // An absolute path no socket address holds is refused with its reason, not as relative.
  options.plugin_dir = "/" + std::string(120, 'p');
  ManagerImpl deep(options);
  status = deep.Start(nullptr, nullptr);
  EXPECT_EQ(status, absl::InvalidArgumentError(absl::StrCat(
                        "bad socketPath: socket path is 134 bytes, over the limit of 107: ",
                        options.plugin_dir.string(), "/kubelet.sock")));

  StartManager();
  EXPECT_EQ(manager_->Start(nullptr, nullptr).code(), absl::StatusCode::kFailedPrecondition);
}

// A start that fails before it has read the checkpoint (here a bad option) writes none at its
// stop: the file it never read keeps the pods' devices. Before, the stop wrote the empty state
// over it, and the next start forgot every pod. A host that goes on after the failure gets
// nothing admitted, registered or written: before, SyncCheckpoint wrote the empty state too.
TEST_F(ManagerTest, AStartThatFailsLeavesTheCheckpointAsItWas) {
  checkpoint::CheckpointData data;
  data.pod_device_entries.push_back({"pod-1", "app", kResource, {{0, {"Dev1"}}}, ""});
  data.registered_devices[kResource] = {"Dev1"};
  const std::string bytes = checkpoint::Encode(data);
  const std::filesystem::path file = dir_.Sub(std::string(checkpoint::kCheckpointFileName));
  std::ofstream(file, std::ios::binary) << bytes;
  {
    ManagerOptions options = Options();
    options.max_allowable_numa_nodes = 1;
    ManagerImpl manager(options);
    EXPECT_EQ(manager.Start(nullptr, nullptr).code(), absl::StatusCode::kInvalidArgument);
    const Pod pod{
        "pod-2", "default", "pod-2", {}, {{"app", ContainerType::kRegular, {{kResource, 1}}}}};
    EXPECT_EQ(manager.Allocate(pod, pod.containers[0]).code(),
              absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(manager.SyncCheckpoint().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(manager.RegisterPlugin(kResource, dir_.Sub("p.sock").string(), {"v1beta1"}).code(),
              absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(ReadWholeFile(file).value_or(""), bytes);
    manager.Stop();
  }
  EXPECT_EQ(ReadWholeFile(file).value_or(""), bytes);
}

TEST_F(ManagerTest, TestNewManagerImplStart) {
  StartManager();
  EXPECT_TRUE(IsSocket(KubeletSocket()));
  PluginPtr plugin =
      StartPlugin("device-plugin.sock", kResource, {MakeDevice("Dev1"), MakeDevice("Dev2")});
  ASSERT_TRUE(plugin->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource, 2, 2));
  // Stop twice, as upstream's cleanup does.
  manager_->Stop();
  manager_->Stop();
  EXPECT_FALSE(std::filesystem::exists(KubeletSocket()));
  EXPECT_TRUE(WaitFor([&] { return plugin->open_streams() == 0; }));
}

// A Stop (or StopRegistrations, its first step) that races a Start, as a host's signal thread
// during its start-up does, leaves nothing serving: it waits for the Start, whose server it
// then shuts down, or the Start is refused. Before, the Start went on to serve kubelet.sock
// after Stop had returned, and destroying the manager then hung in the server's shutdown.
TEST_F(ManagerTest, AStopThatRacesAStartLeavesNothingServing) {
  for (int round = 0; round < 40; ++round) {
    for (const bool registrations_only : {false, true}) {
      auto manager = std::make_unique<ManagerImpl>(Options());
      std::atomic<int> caller{0};
      RunAtOnce(2, [&] {
        if (caller++ == 0) {
          (void)manager->Start([] { return std::vector<std::string>(); }, [] { return true; });
        } else if (registrations_only) {
          manager->StopRegistrations();
        } else {
          manager->Stop();
        }
      });
      EXPECT_FALSE(std::filesystem::exists(KubeletSocket()))
          << "round " << round << (registrations_only ? ", StopRegistrations" : ", Stop");
      manager.reset();
    }
  }
}

TEST_F(ManagerTest, TestNewManagerImplStartProbeMode) {
  StartManager();
  PluginPtr plugin =
      StartPlugin("device-plugin.sock", kResource, {MakeDevice("Dev1"), MakeDevice("Dev2")});
  ASSERT_TRUE(manager_->ValidatePlugin(kResource, plugin->socket().string(), {"v1beta1"}).ok());
  ASSERT_TRUE(manager_->RegisterPlugin(kResource, plugin->socket().string(), {"v1beta1"}).ok());
  ASSERT_TRUE(WaitForCapacity(kResource, 2, 2));
  manager_->Stop();
}

// A host that hands the probe-mode calls to its plugin watcher gets upstream's marker: the empty
// file DEPRECATION in the plugin folder (GetPluginHandler), which device plugins look for to
// register through plugins_registry/. Asking again keeps it; a symlink planted there is not
// followed, so nothing is created where it points.
TEST_F(ManagerTest, AnnouncingThePluginWatcherCreatesTheDeprecationFile) {
  StartManager();
  const std::filesystem::path marker = dir_.Sub("DEPRECATION");
  EXPECT_FALSE(std::filesystem::exists(marker)) << "only once the host announces the watcher";
  manager_->AnnouncePluginWatcher();
  ASSERT_TRUE(std::filesystem::is_regular_file(marker));
  EXPECT_EQ(std::filesystem::file_size(marker), 0u);
  manager_->AnnouncePluginWatcher();
  EXPECT_TRUE(std::filesystem::is_regular_file(marker));

  std::filesystem::remove(marker);
  const std::filesystem::path elsewhere = dir_.Sub("elsewhere");
  std::filesystem::create_symlink(elsewhere, marker);
  manager_->AnnouncePluginWatcher();
  EXPECT_FALSE(std::filesystem::exists(elsewhere));
  EXPECT_TRUE(std::filesystem::is_symlink(marker));

  // A FIFO there is not waited on (opening it to write would wait for a reader).
  std::filesystem::remove(marker);
  ASSERT_EQ(::mkfifo(marker.c_str(), 0600), 0);
  std::atomic<bool> returned{false};
  std::thread announce([&] {
    manager_->AnnouncePluginWatcher();
    returned = true;
  });
  const bool in_time = WaitFor([&] { return returned.load(); });
  if (!in_time) ::close(::open(marker.c_str(), O_RDONLY | O_NONBLOCK));  // lets it go
  announce.join();
  EXPECT_TRUE(in_time) << "AnnouncePluginWatcher waited on a FIFO";
}

// A plugin found in plugins_registry/ whose service socket is not there yet when the watcher
// registers it (it started its registration server first): the dial waits for the socket, as
// upstream's blocking dial does, and the plugin is registered once it is up. Before, the
// registration was refused at once, and the watcher never asks again.
TEST_F(ManagerTest, AProbeModePluginWhoseServiceSocketComesLateIsRegistered) {
  StartManager();
  const std::filesystem::path socket = dir_.Sub("late.sock");
  absl::Status registered = absl::UnknownError("not returned");
  absl::Notification returned;
  std::thread registration([&] {
    registered = manager_->RegisterPlugin(kResource, socket.string(), {"v1beta1"});
    returned.Notify();
  });
  // The registration is under way before the socket exists (the old code refused it at once,
  // before this could be seen, and the final check caught it too).
  EXPECT_TRUE(WaitFor([&] { return manager_->RegistrationsInFlightForTest() == 1; }));
  EXPECT_FALSE(returned.HasBeenNotified()) << registered;
  PluginPtr plugin = StartPlugin("late.sock", kResource, {MakeDevice("Dev1")});
  registration.join();
  ASSERT_TRUE(registered.ok()) << registered;
  EXPECT_TRUE(WaitForCapacity(kResource, 1, 1));
  manager_->Stop();
}

// A plugin that sends Register a moment before its service listens is dialled once it does, as
// upstream's blocking dial waits for it (before, a missing socket was refused at once).
TEST_F(ManagerTest, APluginThatRegistersBeforeItsSocketExistsIsDialledOnceItDoes) {
  StartManager();
  auto plugin = std::make_unique<FakeDevicePlugin>(dir_.Sub("late.sock"), kResource,
                                                   std::vector{MakeDevice("Dev1")});
  absl::Status registered = absl::UnknownError("not returned");
  std::thread registration(
      [&] { registered = plugin->Register(KubeletSocket(), "v1beta1", kResource, "late.sock"); });
  EXPECT_TRUE(WaitFor([&] { return registrations_.registrations() == 1; }));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("late.sock")));
  EXPECT_TRUE(plugin->Start().ok());
  registration.join();
  ASSERT_TRUE(registered.ok()) << registered;
  EXPECT_TRUE(WaitForCapacity(kResource, 1, 1));
}

// Upstream's Register handler makes one blocking dial of 10 s, which waits for a socket that is
// not there yet: the wait for the socket spends the dial timeout, and the dial that follows has
// only what is left of it. Before, each had the whole timeout (20 s at worst).
TEST_F(ManagerTest, TheWaitForAPluginsSocketSpendsItsDialTimeout) {
  ManagerOptions options = Options();
  options.endpoint_factory = &fakes_;
  StartManager(std::move(options));
  FakeDevicePlugin registrar(dir_.Sub("unused.sock"), kResource, {});
  const absl::Time before = absl::Now();
  absl::Status registered = absl::UnknownError("not returned");
  std::thread registration(
      [&] { registered = registrar.Register(KubeletSocket(), "v1beta1", kResource, "late.sock"); });
  EXPECT_TRUE(WaitFor([&] { return registrations_.registrations() == 1; }));
  // The socket comes later than the registration by a measurable time, whatever the machine's
  // speed. The handler counts the registration a moment before it sets the deadline, so the
  // deadline is compared with the socket's arrival, not with the count.
  const absl::Time registered_by = absl::Now();
  EXPECT_TRUE(WaitFor([&] { return absl::Now() - registered_by > absl::Milliseconds(50); }));
  const absl::Time socket_at = absl::Now();
  ListeningSocket late(dir_.Sub("late.sock"));
  ASSERT_TRUE(late.listening());
  registration.join();
  ASSERT_TRUE(registered.ok()) << registered;
  const absl::Time dial_deadline = fakes_.last_dial_deadline();
  EXPECT_GE(dial_deadline, before + Options().dial_timeout);
  // A dial given the whole timeout once the socket is there would end after this.
  EXPECT_LT(dial_deadline, socket_at + Options().dial_timeout);
}

// A Register that waits for a connect thread, all of them held by plugins that hang, gets its
// whole dial timeout once it has one: upstream's handler dials on a goroutine of its own, so
// nothing it waits for first is spent from its dial. Before, the wait was, and a registration
// queued behind hung plugins was refused "no connection ... within 10s" without a dial.
TEST_F(ManagerTest, ARegistrationThatWaitsForAConnectThreadGetsItsWholeDialTimeout) {
  HoldsTheFirstDial factory;
  ManagerOptions options = Options();
  options.endpoint_factory = &factory;
  options.connect_threads = 1;
  StartManager(std::move(options));
  ListeningSocket hung(dir_.Sub("hung.sock"));
  ListeningSocket queued(dir_.Sub("queued.sock"));
  ASSERT_TRUE(hung.listening() && queued.listening());
  FakeDevicePlugin registrar(dir_.Sub("unused.sock"), kResource, {});
  absl::Status hung_status = absl::UnknownError("not returned");
  absl::Status queued_status = absl::UnknownError("not returned");
  std::thread first([&] {
    hung_status = registrar.Register(KubeletSocket(), "v1beta1", kResource, "hung.sock");
  });
  factory.holding().WaitForNotification();
  std::thread second([&] {
    queued_status = registrar.Register(KubeletSocket(), "v1beta1", kResource1, "queued.sock");
  });
  EXPECT_TRUE(WaitFor([&] { return registrations_.registrations() == 2; }));
  // The second waits for the thread a measurable time, whatever the machine's speed.
  const absl::Time queued_by = absl::Now();
  EXPECT_TRUE(WaitFor([&] { return absl::Now() - queued_by > absl::Milliseconds(50); }));
  EXPECT_FALSE(factory.deadline("queued.sock").has_value()) << "dialled without a free thread";
  const absl::Time released_at = absl::Now();
  factory.Release();
  first.join();
  second.join();
  EXPECT_TRUE(hung_status.ok()) << hung_status;
  EXPECT_TRUE(queued_status.ok()) << queued_status;
  ASSERT_TRUE(factory.deadline("queued.sock").has_value());
  EXPECT_GE(*factory.deadline("queued.sock"), released_at + Options().dial_timeout);
}

// A plugin's endpoint of any length is logged in excerpt when its registration fails, as its
// resource name is. Before, the endpoint was logged whole, twice (the error quotes it): 100
// registrations of 3 MB endpoints wrote 165 MB of log in 13 s.
TEST_F(ManagerTest, ALongEndpointIsLoggedInExcerpt) {
  std::ostringstream log;
  ManagerOptions options = Options();
  options.logger = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  StartManager(std::move(options));
  FakeDevicePlugin plugin(dir_.Sub("p.sock"), kResource, {MakeDevice("a")});
  ASSERT_TRUE(plugin.Start().ok());
  const std::string endpoint(200'000, 'e');
  EXPECT_FALSE(plugin.Register(KubeletSocket(), "v1beta1", kResource, endpoint).ok());
  manager_.reset();  // it logs until it stops
  const std::string text = log.str();
  EXPECT_TRUE(absl::StrContains(text, "Failed to register device plugin")) << text.substr(0, 4096);
  EXPECT_TRUE(absl::StrContains(text, "(200000 bytes)")) << text.substr(0, 4096);
  EXPECT_LT(text.size(), 20'000u);
}

// While a registration waits for its socket, a symlink planted at the name is refused as one
// there at Register is: the dial never follows it to a socket outside the plugin folder.
TEST_F(ManagerTest, ASymlinkPlantedWhileARegistrationWaitsIsRefused) {
  StartManager();
  TempDir elsewhere;
  FakeDevicePlugin outside(elsewhere.Sub("p.sock"), kResource, {MakeDevice("a")});
  ASSERT_TRUE(outside.Start().ok());
  absl::Status registered = absl::UnknownError("not returned");
  std::thread registration(
      [&] { registered = outside.Register(KubeletSocket(), "v1beta1", kResource, "late.sock"); });
  EXPECT_TRUE(WaitFor([&] { return registrations_.registrations() == 1; }));
  std::filesystem::create_symlink(elsewhere.Sub("p.sock"), dir_.Sub("late.sock"));
  registration.join();
  EXPECT_FALSE(registered.ok());
  EXPECT_TRUE(absl::StrContains(registered.message(), "late.sock is not a unix socket"))
      << registered;
  EXPECT_EQ(outside.get_options_calls(), 0);
  EXPECT_TRUE(manager_->GetCapacity().capacity.empty());
}

TEST_F(ManagerTest, TestDevicePluginReRegistration) {
  for (bool pre_start : {false, true}) {
    for (bool preferred : {false, true}) {
      SCOPED_TRACE(absl::StrCat("preStart=", pre_start, " preferred=", preferred));
      StartManager();
      FakeDevicePlugin::Options options{.pre_start_required = pre_start,
                                        .get_preferred_allocation_available = preferred};
      const std::vector<v1beta1::Device> devs = {MakeDevice("Dev1"), MakeDevice("Dev2")};
      PluginPtr p1 = StartPlugin("device-plugin.sock", kResource, devs, options);
      ASSERT_TRUE(p1->Register(KubeletSocket()).ok());
      ASSERT_TRUE(WaitForCapacity(kResource, 2, 2)) << "Devices are not updated.";
      EXPECT_EQ(manager_->GetEndpoint(kResource)->plugin_options().pre_start_required(), pre_start);

      PluginPtr p2 = StartPlugin("device-plugin.sock.new", kResource, devs, options);
      ASSERT_TRUE(p2->Register(KubeletSocket()).ok());
      ASSERT_TRUE(WaitFor([&] { return p2->list_and_watch_calls() == 1; }));
      EXPECT_EQ(Capacity(kResource), 2) << "Devices shouldn't change.";
      EXPECT_EQ(Allocatable(kResource), 2) << "Devices shouldn't change.";
      // p2 serves once its first snapshot is in.
      EXPECT_TRUE(
          WaitFor([&] { return manager_->GetEndpoint(kResource)->socket_path() == p2->socket(); }));

      // A plugin re-registering with different devices: the previous plugin's devices go.
      PluginPtr p3 =
          StartPlugin("device-plugin.sock.third", kResource, {MakeDevice("Dev3")}, options);
      ASSERT_TRUE(p3->Register(KubeletSocket()).ok());
      ASSERT_TRUE(WaitForCapacity(kResource, 1, 1))
          << "Devices of plugin previously registered should be removed.";

      // The plugins on the other sockets stay live beside p3 (upstream's endpointStore), and
      // their going away leaves p3 serving.
      EXPECT_EQ(manager_->GetEndpoint(kResource)->socket_path(), p3->socket());
      EXPECT_EQ(p1->open_streams(), 1);
      EXPECT_EQ(p2->open_streams(), 1);
      p1->Stop();
      p2->Stop();
      EXPECT_FALSE(WaitFor([&] { return manager_->GetEndpoint(kResource)->IsStopped(); },
                           std::chrono::milliseconds(300)));
      EXPECT_EQ(manager_->GetEndpoint(kResource)->socket_path(), p3->socket());
      EXPECT_EQ(Allocatable(kResource), 1);
      p3->SetDevices({MakeDevice("Dev3"), MakeDevice("Dev4")});
      ASSERT_TRUE(WaitForCapacity(kResource, 2, 2));
      manager_->Stop();
      p3->Stop();
    }
  }
}

TEST_F(ManagerTest, TestDevicePluginReRegistrationProbeMode) {
  StartManager();
  const std::vector<v1beta1::Device> devs = {MakeDevice("Dev1"), MakeDevice("Dev2")};
  PluginPtr p1 = StartPlugin("device-plugin.sock", kResource, devs);
  ASSERT_TRUE(manager_->RegisterPlugin(kResource, p1->socket().string(), {"v1beta1"}).ok());
  ASSERT_TRUE(WaitForCapacity(kResource, 2, 2)) << "Devices are not updated.";

  PluginPtr p2 = StartPlugin("device-plugin.sock.new", kResource, devs);
  ASSERT_TRUE(manager_->RegisterPlugin(kResource, p2->socket().string(), {"v1beta1"}).ok());
  ASSERT_TRUE(WaitFor([&] { return p2->list_and_watch_calls() == 1; }));
  EXPECT_EQ(Capacity(kResource), 2) << "Devices shouldn't change.";
  EXPECT_EQ(Allocatable(kResource), 2) << "Devices shouldn't change.";

  PluginPtr p3 = StartPlugin("device-plugin.sock.third", kResource, {MakeDevice("Dev3")});
  ASSERT_TRUE(manager_->RegisterPlugin(kResource, p3->socket().string(), {"v1beta1"}).ok());
  ASSERT_TRUE(WaitForCapacity(kResource, 1, 1))
      << "Devices of plugin previously registered should be removed.";

  // Deregistering a plugin beside the serving one takes that one away alone. Deregistering the
  // serving one hands the resource to the newest left, p2, with its devices, still healthy.
  manager_->DeRegisterPlugin(kResource, p1->socket().string());
  EXPECT_TRUE(WaitFor([&] { return p1->open_streams() == 0; }));
  EXPECT_EQ(manager_->GetEndpoint(kResource)->socket_path(), p3->socket());
  EXPECT_EQ(Allocatable(kResource), 1);
  manager_->DeRegisterPlugin(kResource, p3->socket().string());
  EXPECT_TRUE(WaitFor([&] { return p3->open_streams() == 0; }));
  EXPECT_FALSE(manager_->GetEndpoint(kResource)->IsStopped());
  EXPECT_EQ(manager_->GetEndpoint(kResource)->socket_path(), p2->socket());
  ASSERT_TRUE(WaitForCapacity(kResource, 2, 2));
  // The last one's going makes the resource unhealthy.
  manager_->DeRegisterPlugin(kResource, p2->socket().string());
  EXPECT_TRUE(manager_->GetEndpoint(kResource)->IsStopped());
  EXPECT_EQ(Capacity(kResource), 2);
  EXPECT_EQ(Allocatable(kResource), 0);
  EXPECT_TRUE(WaitFor([&] { return p2->open_streams() == 0; }));
}

// A plugin refused after its dial and handshake succeeded (here because the manager began to
// stop meanwhile; upstream's case is PluginConnected's error): the registration fails, and the
// plugin is left neither connected nor half registered.
TEST_F(ManagerTest, TestConnectClient_PluginConnectedFailureDeregisters) {
  DialDoneDuringStop factory;
  ManagerOptions options = Options();
  options.endpoint_factory = &factory;
  StartManager(std::move(options));
  ListeningSocket socket(dir_.Sub("p.sock"));
  absl::Status registered;
  std::thread registration([&] {
    registered = manager_->RegisterPlugin(kResource1, dir_.Sub("p.sock").string(), {"v1beta1"});
  });
  ASSERT_TRUE(factory.dialing().WaitForNotificationWithTimeout(absl::Seconds(10)));
  manager_->Stop();
  registration.join();
  EXPECT_EQ(registered.code(), absl::StatusCode::kUnavailable) << registered;
  EXPECT_EQ(manager_->GetEndpoint(kResource1), nullptr);
  EXPECT_TRUE(manager_->GetCapacity().capacity.empty());
}

// The same refusal drops the connection it made (upstream issue #124716): nothing keeps the
// refused endpoint, so its channel is closed.
TEST_F(ManagerTest, TestConnect_PluginConnectedFailureClosesConnection) {
  DialDoneDuringStop factory;
  ManagerOptions options = Options();
  options.endpoint_factory = &factory;
  StartManager(std::move(options));
  ListeningSocket socket(dir_.Sub("p.sock"));
  std::thread registration([&] {
    EXPECT_FALSE(
        manager_->RegisterPlugin(kResource1, dir_.Sub("p.sock").string(), {"v1beta1"}).ok());
  });
  ASSERT_TRUE(factory.dialing().WaitForNotificationWithTimeout(absl::Seconds(10)));
  manager_->Stop();
  registration.join();
  EXPECT_TRUE(factory.connected().expired());
}

// However often a plugin registers on its socket, one connection streams and one endpoint
// serves. Upstream's handler gets there by ignoring a registration for a (resource, socket)
// already connected; devmgr dials it and replaces the connection (the same-socket rule of
// TestDevicePluginReRegistration_SameSocketReplacesTheEndpoint, below).
TEST_F(ManagerTest, TestConnectClient_SameResourceSameSocketDeduplicated) {
  StartManager();
  PluginPtr plugin = StartPlugin("p.sock", kResource1, {MakeDevice("a")});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(plugin->Register(KubeletSocket()).ok()) << i;
  // Only the last connection's snapshots count, so once a new list counts, its stream is open at
  // the plugin; a replaced stream may still be open there until the plugin sees it cancelled.
  plugin->SetDevices({MakeDevice("a"), MakeDevice("b")});
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 2));
  ASSERT_TRUE(WaitFor([&] { return plugin->open_streams() == 1; }));
  EXPECT_FALSE(WaitFor([&] { return plugin->open_streams() > 1; }, std::chrono::milliseconds(300)));
  // The one stream's end leaves no other endpoint behind to serve the resource.
  plugin->EndStreams();
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 0));
  EXPECT_TRUE(manager_->GetEndpoint(kResource1)->IsStopped());
}

// The same through plugins_registry: two sockets of one resource both stay connected.
TEST_F(ManagerTest, TestConnectClient_SameResourceDifferentSocketsCoexist) {
  StartManager();
  PluginPtr a = StartPlugin("a.sock", kResource1, {MakeDevice("x")});
  PluginPtr b = StartPlugin("b.sock", kResource1, {MakeDevice("x")});
  ASSERT_TRUE(RegisterProbe(*a).ok());
  ASSERT_TRUE(RegisterProbe(*b).ok());
  ASSERT_TRUE(WaitFor([&] { return a->open_streams() == 1 && b->open_streams() == 1; }));
  EXPECT_EQ(a->get_options_calls(), 1);
  EXPECT_EQ(b->get_options_calls(), 1);
  // The newer serves once it has sent its devices.
  EXPECT_TRUE(
      WaitFor([&] { return manager_->GetEndpoint(kResource1)->socket_path() == b->socket(); }));
}

// A deregistration takes away the endpoint on its socket alone: an unknown socket changes
// nothing, and the last one's going leaves the resource without a live endpoint.
TEST_F(ManagerTest, TestDeregisterClient_WrongSocketIsNoop) {
  StartManager();
  PluginPtr a = StartPlugin("a.sock", kResource1, {MakeDevice("x")});
  PluginPtr b = StartPlugin("b.sock", kResource1, {MakeDevice("x")});
  ASSERT_TRUE(RegisterProbe(*a).ok());
  ASSERT_TRUE(RegisterProbe(*b).ok());
  ASSERT_TRUE(WaitFor([&] { return a->open_streams() == 1 && b->open_streams() == 1; }));

  manager_->DeRegisterPlugin(kResource1, dir_.Sub("c.sock").string());
  EXPECT_FALSE(WaitFor([&] { return a->open_streams() + b->open_streams() < 2; },
                       std::chrono::milliseconds(300)));

  manager_->DeRegisterPlugin(kResource1, a->socket().string());
  ASSERT_TRUE(WaitFor([&] { return a->open_streams() == 0; }));
  EXPECT_EQ(b->open_streams(), 1);
  EXPECT_EQ(manager_->GetEndpoint(kResource1)->socket_path(), b->socket());
  EXPECT_FALSE(manager_->GetEndpoint(kResource1)->IsStopped());

  manager_->DeRegisterPlugin(kResource1, b->socket().string());
  ASSERT_TRUE(WaitFor([&] { return b->open_streams() == 0; }));
  EXPECT_TRUE(manager_->GetEndpoint(kResource1)->IsStopped());
}

// Once a socket's endpoint went (its stream ended cleanly), the same socket registers again.
TEST_F(ManagerTest, TestSameSocketRace_ReconnectAfterCleanDisconnect) {
  StartManager();
  PluginPtr plugin = StartPlugin("p.sock", kResource1, {MakeDevice("a")});
  ASSERT_TRUE(plugin->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 1, 1));
  EndpointSharedPtr first = manager_->GetEndpoint(kResource1);
  plugin->EndStreams();
  ASSERT_TRUE(WaitFor([&] { return first->IsStopped(); }));
  ASSERT_TRUE(plugin->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 1, 1));
  EXPECT_NE(manager_->GetEndpoint(kResource1), first);
  EXPECT_FALSE(manager_->GetEndpoint(kResource1)->IsStopped());
}

// A registration on a socket whose endpoint is still connected is not refused (upstream refuses
// it with "device plugin already connected: <socket>" until the old endpoint disconnects): it
// replaces the endpoint. After a disconnect, the socket registers again all the same.
TEST_F(ManagerTest, TestSameSocketRace_DisconnectBeforeReconnectAttempt) {
  StartManager();
  PluginPtr plugin = StartPlugin("p.sock", kResource1, {MakeDevice("x")});
  ASSERT_TRUE(RegisterProbe(*plugin).ok());
  EndpointSharedPtr first = manager_->GetEndpoint(kResource1);
  ASSERT_TRUE(RegisterProbe(*plugin).ok());
  EndpointSharedPtr second = manager_->GetEndpoint(kResource1);
  EXPECT_NE(second, first);
  EXPECT_TRUE(first->IsStopped());
  EXPECT_FALSE(second->IsStopped());
  manager_->DeRegisterPlugin(kResource1, plugin->socket().string());
  EXPECT_TRUE(second->IsStopped());
  ASSERT_TRUE(RegisterProbe(*plugin).ok());
  EXPECT_FALSE(manager_->GetEndpoint(kResource1)->IsStopped());
  ASSERT_TRUE(WaitForCapacity(kResource1, 1, 1));
}

// The end of a replaced endpoint's stream, seen after the new endpoint connected on the same
// socket, does not disconnect the new one: the manager knows which endpoint ended. Upstream keys
// that disconnect on the socket alone, and its test records that the fresh endpoint is evicted.
TEST_F(ManagerTest, TestSameSocketRace_LateDisconnectAfterReconnect) {
  StartManager();
  PluginPtr plugin = StartPlugin("p.sock", kResource1, {MakeDevice("x")});
  ASSERT_TRUE(plugin->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitFor([&] { return plugin->open_streams() == 1; }));
  ASSERT_TRUE(plugin->Register(KubeletSocket()).ok());
  EndpointSharedPtr fresh = manager_->GetEndpoint(kResource1);
  // The old stream ended at the plugin: its end reaches the manager after the reconnect.
  ASSERT_TRUE(
      WaitFor([&] { return plugin->list_and_watch_calls() == 2 && plugin->open_streams() == 1; }));
  EXPECT_FALSE(WaitFor([&] { return fresh->IsStopped(); }, std::chrono::milliseconds(300)));
  EXPECT_EQ(manager_->GetEndpoint(kResource1), fresh);
  ASSERT_TRUE(WaitForCapacity(kResource1, 1, 1));
}

// A plugin's new instance takes the socket over and registers, again and again if it likes:
// each registration is accepted and reaches the new instance. Upstream's newest manager refuses
// them for as long as its endpoint on that socket, dialed at the old instance's moment, stays
// connected: its test records the retries as possibly endless.
TEST_F(ManagerTest, TestSameSocketRace_FastTakeoverMayResultInInfiniteRetries) {
  StartManager();
  PluginPtr old_instance = StartPlugin("p.sock", kResource1, {MakeDevice("a")});
  ASSERT_TRUE(old_instance->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 1, 1));
  PluginPtr new_instance = StartPlugin("p.sock", kResource1, {MakeDevice("a")});
  for (int retry = 0; retry < 3; ++retry) {
    ASSERT_TRUE(new_instance->Register(KubeletSocket()).ok()) << retry;
  }
  ASSERT_TRUE(manager_->GetEndpoint(kResource1)->Allocate({"a"}).ok());
  EXPECT_EQ(new_instance->allocate_calls(), 1);
  EXPECT_EQ(old_instance->allocate_calls(), 0);
  EXPECT_TRUE(WaitFor([&] { return old_instance->open_streams() == 0; }));
}

// The devices are the report of a plugin that went, and no plugin left has sent a snapshot
// yet: nothing vouches for them, so they are unhealthy until one does. Whether the one that
// went was the only one to report (a), or kept serving beside a newer plugin that had not sent
// its own (b), or its socket was registered again before it went (c).
TEST_F(ManagerTest, DevicesOfAPluginThatWentAreUnhealthyUntilTheServingOneReports) {
  std::vector<std::shared_ptr<FakeEndpoint>> plugins = StartWithFakes({"x.sock", "y.sock"});
  ASSERT_EQ(plugins.size(), 2u);
  std::shared_ptr<FakeEndpoint> x = plugins[0];
  std::shared_ptr<FakeEndpoint> y = plugins[1];
  ASSERT_TRUE(y->PushDevices({Device{"y1", Health::kHealthy, {}}}));
  EXPECT_EQ(Allocatable(kResource1), 1);

  // (a)
  y->EndStream(absl::OkStatus());
  EXPECT_EQ(manager_->GetEndpoint(kResource1), x);
  EXPECT_EQ(Capacity(kResource1), 1);
  EXPECT_EQ(Allocatable(kResource1), 0);
  ASSERT_TRUE(
      x->PushDevices({Device{"x1", Health::kHealthy, {}}, Device{"x2", Health::kHealthy, {}}}));
  EXPECT_EQ(Allocatable(kResource1), 2);

  // (b)
  std::shared_ptr<FakeEndpoint> z = RegisterFake("y.sock");
  EXPECT_EQ(manager_->GetEndpoint(kResource1), x) << "z serves once it reports";
  EXPECT_EQ(Allocatable(kResource1), 2) << "a registration alone changes no device";
  x->EndStream(absl::OkStatus());
  EXPECT_EQ(manager_->GetEndpoint(kResource1), z);
  EXPECT_FALSE(z->IsStopped());
  EXPECT_EQ(Capacity(kResource1), 2);
  EXPECT_EQ(Allocatable(kResource1), 0);
  ASSERT_TRUE(z->PushDevices({Device{"z1", Health::kHealthy, {}}}));
  EXPECT_EQ(Capacity(kResource1), 1);
  EXPECT_EQ(Allocatable(kResource1), 1);

  // (c) As (b), where the plugin whose report the devices are registered again on its socket
  // before it went: the new connection stands for the report of the one it replaced.
  std::shared_ptr<FakeEndpoint> v = RegisterFake("x.sock");
  std::shared_ptr<FakeEndpoint> w = RegisterFake("y.sock");
  EXPECT_TRUE(z->IsStopped()) << "replaced";
  EXPECT_EQ(Allocatable(kResource1), 1);
  w->EndStream(absl::OkStatus());
  EXPECT_EQ(manager_->GetEndpoint(kResource1), v);
  EXPECT_EQ(Allocatable(kResource1), 0);
}

// An admission picked devices of the plugin serving its resource; while it asked that plugin for
// its preference, the plugin went and one on another socket, with devices of its own, took over.
// The admission is refused as a pick that finds too few devices is, and the new plugin is never
// asked to allocate devices it did not report.
TEST_F(ManagerTest, AnAdmissionWhosePluginWasTakenOverWhilePickingIsRefused) {
  std::vector<std::shared_ptr<FakeEndpoint>> plugins =
      StartWithFakes({"a.sock", "b.sock"}, /*preferred_allocation=*/true);
  ASSERT_EQ(plugins.size(), 2u);
  std::shared_ptr<FakeEndpoint> a = plugins[0];
  std::shared_ptr<FakeEndpoint> b = plugins[1];
  ASSERT_TRUE(a->PushDevices({Device{"a1", Health::kHealthy, {}}}));
  ASSERT_TRUE(
      b->PushDevices({Device{"b1", Health::kHealthy, {}}, Device{"b2", Health::kHealthy, {}}}));
  absl::Notification asked;
  absl::Notification answer;
  b->OnGetPreferredAllocation([&](const std::vector<std::string>&, const std::vector<std::string>&,
                                  int) -> absl::StatusOr<v1beta1::PreferredAllocationResponse> {
    asked.Notify();
    answer.WaitForNotificationWithTimeout(absl::Seconds(10));
    return v1beta1::PreferredAllocationResponse();
  });
  const Pod pod{
      "pod1", "default", "pod1", {}, {Container{"c", ContainerType::kRegular, {{kResource1, 1}}}}};
  absl::Status admitted;
  std::thread admission([&] { admitted = manager_->Allocate(pod, pod.containers[0]); });
  ASSERT_TRUE(asked.WaitForNotificationWithTimeout(absl::Seconds(10)));
  b->EndStream(absl::OkStatus());
  EXPECT_EQ(manager_->GetEndpoint(kResource1), a);
  answer.Notify();
  admission.join();
  // The devices it picked are no longer free devices of the resource when its pick ends.
  EXPECT_EQ(admitted.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(admitted.message(),
            "requested number of devices unavailable for domain1.com/resource1. Requested: 1, "
            "Available: 0");
  EXPECT_EQ(a->allocate_calls(), 0);
  EXPECT_TRUE(manager_->GetDevices("pod1", "c").empty());
  EXPECT_EQ(Allocatable(kResource1), 1) << "a1 is free";
}

// A plugin that registers beside the one serving its resource serves it from its first
// snapshot, not before: until then admissions go to the plugin whose devices they picked, so a
// new instance that is slow to report, or never does, is never asked for devices it did not
// report. Upstream's newest manager makes it primary at once, and sends it the other's IDs.
TEST_F(ManagerTest, APluginBesideTheServingOneServesOnceItReports) {
  std::vector<std::shared_ptr<FakeEndpoint>> plugins = StartWithFakes({"a.sock"});
  ASSERT_EQ(plugins.size(), 1u);
  std::shared_ptr<FakeEndpoint> a = plugins[0];
  ASSERT_TRUE(a->PushDevices({Device{"a1", Health::kHealthy, {}}}));
  socket_files_.push_back(std::make_unique<ListeningSocket>(dir_.Sub("b.sock")));
  std::shared_ptr<FakeEndpoint> b = RegisterFake("b.sock");
  EXPECT_EQ(manager_->GetEndpoint(kResource1), a);

  const Pod pod{
      "pod1", "default", "pod1", {}, {Container{"c", ContainerType::kRegular, {{kResource1, 1}}}}};
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  EXPECT_EQ(a->allocate_calls(), 1);
  EXPECT_EQ(b->allocate_calls(), 0);

  ASSERT_TRUE(
      b->PushDevices({Device{"b1", Health::kHealthy, {}}, Device{"b2", Health::kHealthy, {}}}));
  EXPECT_EQ(manager_->GetEndpoint(kResource1), b);
  EXPECT_EQ(Capacity(kResource1), 2);
  // The older plugin's snapshots are kept for a takeover, and change nothing meanwhile.
  ASSERT_TRUE(
      a->PushDevices({Device{"a1", Health::kHealthy, {}}, Device{"a2", Health::kHealthy, {}},
                      Device{"a3", Health::kHealthy, {}}}));
  EXPECT_EQ(manager_->GetEndpoint(kResource1), b);
  EXPECT_EQ(Capacity(kResource1), 2);
}

// When the plugin serving a resource goes, the newest of those that have sent devices takes
// over, not a newer one that has sent none: the resource stays healthy on the devices of a
// plugin that vouches for them.
TEST_F(ManagerTest, TheTakeoverGoesToTheNewestPluginThatReported) {
  std::vector<std::shared_ptr<FakeEndpoint>> plugins = StartWithFakes({"a.sock", "b.sock"});
  ASSERT_EQ(plugins.size(), 2u);
  std::shared_ptr<FakeEndpoint> a = plugins[0];
  std::shared_ptr<FakeEndpoint> b = plugins[1];
  ASSERT_TRUE(a->PushDevices({Device{"a1", Health::kHealthy, {}}}));
  socket_files_.push_back(std::make_unique<ListeningSocket>(dir_.Sub("c.sock")));
  std::shared_ptr<FakeEndpoint> c = RegisterFake("c.sock");
  ASSERT_TRUE(
      c->PushDevices({Device{"c1", Health::kHealthy, {}}, Device{"c2", Health::kHealthy, {}}}));
  EXPECT_EQ(manager_->GetEndpoint(kResource1), c);

  c->EndStream(absl::OkStatus());
  EXPECT_EQ(manager_->GetEndpoint(kResource1), a) << "b has sent no devices";
  EXPECT_EQ(Capacity(kResource1), 1);
  EXPECT_EQ(Allocatable(kResource1), 1);
  // Once b reports, it is the newest that did.
  ASSERT_TRUE(b->PushDevices({Device{"b1", Health::kHealthy, {}}}));
  EXPECT_EQ(manager_->GetEndpoint(kResource1), b);
}

// One socket, reached through kubelet.sock (the plugin folder joined with its name, here a
// folder named with a "." in it) and through plugins_registry (the path written plainly), is one
// socket: the second registration replaces the first, and deregistering the path disconnects it.
TEST_F(ManagerTest, OneSocketNamedTwoWaysIsOneEndpoint) {
  ManagerOptions options = Options();
  options.plugin_dir = dir_.path() / ".";
  StartManager(std::move(options));
  PluginPtr plugin = StartPlugin("p.sock", kResource1, {MakeDevice("a")});
  ASSERT_TRUE(plugin->Register(dir_.path() / "." / "kubelet.sock").ok());
  ASSERT_TRUE(WaitFor([&] { return plugin->open_streams() == 1; }));
  ASSERT_TRUE(RegisterProbe(*plugin).ok());
  ASSERT_TRUE(WaitFor([&] { return plugin->list_and_watch_calls() == 2; }));
  EXPECT_TRUE(WaitFor([&] { return plugin->open_streams() == 1; }));
  EXPECT_FALSE(WaitFor([&] { return plugin->open_streams() > 1; }, std::chrono::milliseconds(300)));
  manager_->DeRegisterPlugin(kResource1, plugin->socket().string());
  EXPECT_TRUE(manager_->GetEndpoint(kResource1)->IsStopped());
  EXPECT_TRUE(WaitFor([&] { return plugin->open_streams() == 0; }));
}

// Plugins on different sockets serve one resource side by side (upstream PR #139338): the
// newest connected is the one admission calls, the other keeps its stream.
TEST_F(ManagerTest, TestPluginConnected_SameResourceDifferentSocketsCoexist) {
  StartManager();
  PluginPtr a = StartPlugin("a.sock", kResource1, {MakeDevice("a")});
  ASSERT_TRUE(a->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 1, 1));
  PluginPtr b = StartPlugin("b.sock", kResource1, {MakeDevice("b"), MakeDevice("c")});
  ASSERT_TRUE(b->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 2));
  EXPECT_EQ(manager_->GetEndpoint(kResource1)->socket_path(), b->socket());
  EXPECT_EQ(a->open_streams(), 1) << "the older plugin's stream stays up";
  EXPECT_EQ(b->open_streams(), 1);
  ASSERT_TRUE(manager_->GetEndpoint(kResource1)->Allocate({"b"}).ok());
  EXPECT_EQ(b->allocate_calls(), 1);
  EXPECT_EQ(a->allocate_calls(), 0);
}

// When the plugin serving a resource goes and another socket still serves it, the newest of the
// others takes over with the devices of its last snapshot: the resource stays healthy. Until
// then that plugin's snapshots change nothing the node reports.
TEST_F(ManagerTest, TestPluginDisconnected_PromotesSurvivor) {
  StartManager();
  PluginPtr a = StartPlugin("a.sock", kResource1, {MakeDevice("a1"), MakeDevice("a2")});
  ASSERT_TRUE(a->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 2));
  PluginPtr b = StartPlugin("b.sock", kResource1, {MakeDevice("b1")});
  ASSERT_TRUE(b->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 1, 1));

  a->SetDevices({MakeDevice("a1"), MakeDevice("a2"), MakeDevice("a3")});
  EXPECT_FALSE(WaitFor([&] { return Capacity(kResource1) == 3; }, std::chrono::milliseconds(300)))
      << "a snapshot of a plugin that does not serve the resource";

  EndpointSharedPtr serving = manager_->GetEndpoint(kResource1);
  b->EndStreams();
  ASSERT_TRUE(WaitFor([&] { return serving->IsStopped(); }));
  EndpointSharedPtr survivor = manager_->GetEndpoint(kResource1);
  EXPECT_FALSE(survivor->IsStopped());
  EXPECT_EQ(survivor->socket_path(), a->socket());
  EXPECT_EQ(Capacity(kResource1), 3);
  EXPECT_EQ(Allocatable(kResource1), 3);
  EXPECT_TRUE(manager_->GetCapacity().removed.empty());
  ASSERT_TRUE(survivor->Allocate({"a3"}).ok());
  EXPECT_EQ(a->allocate_calls(), 1);
}

// The last live endpoint's going makes the resource unhealthy, and starts its grace period.
TEST_F(ManagerTest, TestPluginDisconnected_LastEndpointMarksUnhealthy) {
  StartManager();
  PluginPtr a = StartPlugin("a.sock", kResource1, {MakeDevice("x"), MakeDevice("y")});
  ASSERT_TRUE(a->Register(KubeletSocket()).ok());
  // b's devices differ, so that the capacity tells its snapshot is the resource's devices (a's
  // going while b had reported none would make them unhealthy).
  PluginPtr b =
      StartPlugin("b.sock", kResource1, {MakeDevice("x"), MakeDevice("y"), MakeDevice("z")});
  ASSERT_TRUE(b->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 3, 3));
  a->Stop();
  ASSERT_TRUE(WaitFor([&] { return a->open_streams() == 0; }));
  EXPECT_FALSE(
      WaitFor([&] { return Allocatable(kResource1) == 0; }, std::chrono::milliseconds(300)));
  b->Stop();
  ASSERT_TRUE(WaitForCapacity(kResource1, 3, 0));
  EXPECT_TRUE(manager_->GetEndpoint(kResource1)->IsStopped());
  clock_.Advance(kEndpointStopGracePeriod + absl::Seconds(1));
  EXPECT_EQ(manager_->GetCapacity().removed, std::vector<std::string>{kResource1});
}

TEST_F(ManagerTest, TestUpdateCapacityAllocatable) {
  StartManager();
  std::vector<v1beta1::Device> devs = {MakeDevice("Device1", true), MakeDevice("Device2", true),
                                       MakeDevice("Device3", false)};
  PluginPtr p1 = StartPlugin("p1.sock", kResource1, devs);
  ASSERT_TRUE(p1->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 3, 2));
  EXPECT_TRUE(manager_->GetCapacity().removed.empty());

  // Deleting an unhealthy device changes capacity, not allocatable.
  p1->SetDevices({devs[0], devs[1]});
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 2));
  // A healthy device turning unhealthy reduces allocatable by 1.
  devs[1].set_health("Unhealthy");
  p1->SetDevices(devs);
  ASSERT_TRUE(WaitForCapacity(kResource1, 3, 1));
  // Deleting a healthy device reduces capacity and allocatable by 1.
  std::vector<v1beta1::Device> devs2(devs.begin() + 1, devs.end());
  p1->SetDevices(devs2);
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 0));

  // The plugin of resource 1 goes away; resource 2 arrives.
  p1->EndStreams();
  ASSERT_TRUE(WaitFor([&] { return manager_->GetEndpoint(kResource1)->IsStopped(); }));
  PluginPtr p2 = StartPlugin("p2.sock", kResource2, devs);
  ASSERT_TRUE(p2->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource2, 3, 1));
  CapacityResult both = manager_->GetCapacity();
  EXPECT_EQ(both.capacity.size(), 2u);

  // Resource 1's grace period expires (5 minutes and 10 seconds after its stop).
  clock_.Advance(kEndpointStopGracePeriod + absl::Seconds(10));
  CapacityResult expired = manager_->GetCapacity();
  EXPECT_EQ(expired.removed, (std::vector<std::string>{kResource1}));
  EXPECT_EQ(expired.capacity.count(kResource1), 0u);
  EXPECT_EQ(expired.allocatable.count(kResource1), 0u);
  EXPECT_EQ(manager_->GetEndpoint(kResource1), nullptr);
  EXPECT_EQ(expired.capacity.size(), 1u);
  EXPECT_TRUE(manager_->GetCapacity().removed.empty()) << "reported once";

  // Resource 2's plugin disconnects: its endpoint is stopped and refuses calls.
  EndpointSharedPtr e2 = manager_->GetEndpoint(kResource2);
  p2->Stop();
  ASSERT_TRUE(WaitFor([&] { return e2->IsStopped(); }));
  EXPECT_FALSE(e2->Allocate({"Device1"}).ok());
  EXPECT_FALSE(e2->GetPreferredAllocation({"Device1"}, {}, 1).ok());
  EXPECT_FALSE(e2->PreStartContainer({"Device1"}).ok());
  // Its devices are all unhealthy now.
  EXPECT_EQ(Capacity(kResource2), 3);
  EXPECT_EQ(Allocatable(kResource2), 0);

  // After a restart from the checkpoint, resource 2 has a stopped endpoint, capacity 0, and is
  // still a device plugin resource (reported, not removed).
  manager_->Stop();
  StartManager();
  CapacityResult restored = manager_->GetCapacity();
  ASSERT_EQ(restored.capacity.count(kResource2), 1u);
  EXPECT_EQ(restored.capacity[kResource2], 0);
  EXPECT_EQ(restored.allocatable[kResource2], 0);
  EXPECT_TRUE(restored.removed.empty());
  ASSERT_NE(manager_->GetEndpoint(kResource2), nullptr);
  EXPECT_TRUE(manager_->GetEndpoint(kResource2)->IsStopped());
}

TEST_F(ManagerTest, TestEndpointSyncOnDisconnect) {
  StartManager();
  PluginPtr plugin = StartPlugin("p.sock", kResource1, {MakeDevice("a"), MakeDevice("b")});
  ASSERT_TRUE(plugin->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 2));
  plugin->EndStreams();
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 0));
  EXPECT_TRUE(manager_->GetAllocatableDevices()[kResource1].empty());
  // The next checkpoint written (here for another plugin's devices) registers none of them.
  PluginPtr other = StartPlugin("q.sock", kResource2, {MakeDevice("x")});
  ASSERT_TRUE(other->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitFor([&] {
    auto data = ReadCheckpoint();
    return data.ok() && data->registered_devices.contains(kResource2);
  }));
  auto written = ReadCheckpoint();
  ASSERT_TRUE(written.ok());
  ASSERT_TRUE(written->registered_devices.contains(kResource1)) << "registered until it expires";
  EXPECT_TRUE(written->registered_devices[kResource1].empty());
  clock_.Advance(kEndpointStopGracePeriod);  // not yet: strictly greater than the grace period
  EXPECT_EQ(Capacity(kResource1), 2);
  clock_.Advance(absl::Seconds(1));
  CapacityResult result = manager_->GetCapacity();
  EXPECT_EQ(result.removed, (std::vector<std::string>{kResource1}));
  // Endpoint, healthy and unhealthy sets all went in that one call.
  EXPECT_EQ(manager_->GetEndpoint(kResource1), nullptr);
  EXPECT_EQ(manager_->GetAllocatableDevices().count(kResource1), 0u);
  EXPECT_FALSE(manager_->GetCapacity().capacity.contains(kResource1));
  // The checkpoint forgets it too.
  ASSERT_TRUE(WaitFor([&] {
    auto data = ReadCheckpoint();
    return data.ok() && !data->registered_devices.contains(kResource1);
  }));
}

TEST_F(ManagerTest, ReRegistrationWithinGracePeriodRestoresTheResource) {
  StartManager();
  PluginPtr p1 = StartPlugin("p.sock", kResource1, {MakeDevice("a"), MakeDevice("b")});
  ASSERT_TRUE(p1->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 2));
  p1->Stop();
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 0));
  clock_.Advance(absl::Minutes(4));
  // The restarted plugin comes back on the same socket name.
  PluginPtr p2 = StartPlugin("p.sock", kResource1, {MakeDevice("a"), MakeDevice("b")});
  ASSERT_TRUE(p2->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 2));
  EXPECT_FALSE(manager_->GetEndpoint(kResource1)->IsStopped());
  clock_.Advance(absl::Minutes(10));
  EXPECT_EQ(Allocatable(kResource1), 2);
  EXPECT_TRUE(manager_->GetCapacity().removed.empty());
}

TEST_F(ManagerTest, TestResetExtendedResource) {
  {
    StartManager();
    PluginPtr plugin = StartPlugin("p.sock", kResource1, {MakeDevice("dev1")});
    ASSERT_TRUE(plugin->Register(KubeletSocket()).ok());
    ASSERT_TRUE(WaitForCapacity(kResource1, 1, 1));
    manager_->Stop();
  }
  // The checkpoint is present: the node was not re-created.
  ManagerImpl manager(Options());
  ASSERT_TRUE(std::filesystem::exists(dir_.Sub(std::string(checkpoint::kCheckpointFileName))));
  EXPECT_FALSE(manager.ShouldResetExtendedResourceCapacity());
  // The checkpoint is gone: the node was re-created.
  std::filesystem::remove(dir_.Sub(std::string(checkpoint::kCheckpointFileName)));
  EXPECT_TRUE(manager.ShouldResetExtendedResourceCapacity());
}

// A wiped node, its plugin folder gone with the rest: the answer is yes before Start (upstream's
// checkpoint manager makes the folder, empty, with the manager) and after it, whose kubelet.sock
// is no sign of the node's past; before, it was no in both. A manager started over what that
// one left says no.
TEST_F(ManagerTest, AWipedNodeIsToldSoBeforeAndAfterStart) {
  ManagerOptions options = Options();
  options.plugin_dir = dir_.Sub("wiped");
  auto manager = std::make_unique<ManagerImpl>(options);
  EXPECT_TRUE(manager->ShouldResetExtendedResourceCapacity());
  ASSERT_TRUE(manager->Start([] { return std::vector<std::string>(); }, [] { return true; }).ok());
  ASSERT_TRUE(IsSocket(options.plugin_dir / "kubelet.sock"));
  EXPECT_TRUE(manager->ShouldResetExtendedResourceCapacity());
  PluginPtr plugin = StartPlugin("wiped/p.sock", kResource1, {MakeDevice("dev1")});
  ASSERT_TRUE(plugin->Register(options.plugin_dir / "kubelet.sock").ok());
  ASSERT_TRUE(WaitFor([&] {
    return std::filesystem::exists(options.plugin_dir /
                                   std::string(checkpoint::kCheckpointFileName));
  }));
  EXPECT_TRUE(manager->ShouldResetExtendedResourceCapacity()) << "the answer of its start";
  manager->Stop();
  manager = std::make_unique<ManagerImpl>(options);
  EXPECT_FALSE(manager->ShouldResetExtendedResourceCapacity());
  ASSERT_TRUE(manager->Start([] { return std::vector<std::string>(); }, [] { return true; }).ok());
  EXPECT_FALSE(manager->ShouldResetExtendedResourceCapacity());
}

TEST_F(ManagerTest, TestGetAllocatableDevicesMultipleResources) {
  StartManager();
  PluginPtr p1 = StartPlugin("p1.sock", kResource1,
                             {MakeDevice("R1A", true, {0}), MakeDevice("R1B", false, {1})});
  PluginPtr p2 = StartPlugin("p2.sock", kResource2, {MakeDevice("R2A", true, {1})});
  ASSERT_TRUE(p1->Register(KubeletSocket()).ok());
  ASSERT_TRUE(p2->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 1));
  ASSERT_TRUE(WaitForCapacity(kResource2, 1, 1));
  ResourceDevices allocatable = manager_->GetAllocatableDevices();
  ASSERT_EQ(allocatable.size(), 2u);
  ASSERT_EQ(allocatable[kResource1].size(), 1u);
  EXPECT_EQ(allocatable[kResource1]["R1A"].numa_nodes, (std::vector<int64_t>{0}));
  ASSERT_EQ(allocatable[kResource2].size(), 1u);
  EXPECT_EQ(allocatable[kResource2]["R2A"].numa_nodes, (std::vector<int64_t>{1}));
}

TEST_F(ManagerTest, TestGetAllocatableDevicesHealthTransition) {
  StartManager();
  PluginPtr plugin = StartPlugin("p.sock", kResource1, {MakeDevice("A"), MakeDevice("B", false)});
  ASSERT_TRUE(plugin->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 1));
  EXPECT_EQ(manager_->GetAllocatableDevices()[kResource1].count("A"), 1u);
  plugin->SetDevices({MakeDevice("A"), MakeDevice("B", true)});
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 2));
  EXPECT_EQ(manager_->GetAllocatableDevices()[kResource1].size(), 2u);
  plugin->SetDevices({MakeDevice("A", false), MakeDevice("B", true)});
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 1));
  ResourceDevices devices = manager_->GetAllocatableDevices();
  EXPECT_EQ(devices[kResource1].count("A"), 0u);
  EXPECT_EQ(devices[kResource1].count("B"), 1u);
}

// Upstream's GetAllocatableDevices is allDevices.Filter(healthyDevices): the devices of each
// resource that the condition names, and no resource that keeps none. Here the condition is the
// plugins' health: foo keeps two devices, bar one, and baz, all unhealthy, is left out; once
// none is healthy, nothing is left.
TEST_F(ManagerTest, TestResourceDeviceInstanceFilter) {
  constexpr char kFoo[] = "domain.com/foo";
  constexpr char kBar[] = "domain.com/bar";
  constexpr char kBaz[] = "domain.com/baz";
  StartManager();
  PluginPtr foo = StartPlugin("foo.sock", kFoo,
                              {MakeDevice("foo1"), MakeDevice("foo2", false), MakeDevice("foo3")});
  PluginPtr bar = StartPlugin(
      "bar.sock", kBar, {MakeDevice("bar1", false), MakeDevice("bar2"), MakeDevice("bar3", false)});
  PluginPtr baz = StartPlugin(
      "baz.sock", kBaz,
      {MakeDevice("baz1", false), MakeDevice("baz2", false), MakeDevice("baz3", false)});
  for (const PluginPtr* plugin : {&foo, &bar, &baz}) {
    ASSERT_TRUE((*plugin)->Register(KubeletSocket()).ok());
  }
  ASSERT_TRUE(WaitForCapacity(kFoo, 3, 2));
  ASSERT_TRUE(WaitForCapacity(kBar, 3, 1));
  ASSERT_TRUE(WaitForCapacity(kBaz, 3, 0));
  const auto ids = [](const ResourceDevices& devices) {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& [resource, table] : devices) {
      for (const auto& [id, device] : table) out[resource].push_back(id);
    }
    return out;
  };
  using Ids = std::map<std::string, std::vector<std::string>>;
  EXPECT_EQ(ids(manager_->GetAllocatableDevices()),
            (Ids{{kBar, {"bar2"}}, {kFoo, {"foo1", "foo3"}}}));

  foo->SetDevices(
      {MakeDevice("foo1", false), MakeDevice("foo2", false), MakeDevice("foo3", false)});
  bar->SetDevices(
      {MakeDevice("bar1", false), MakeDevice("bar2", false), MakeDevice("bar3", false)});
  ASSERT_TRUE(WaitForCapacity(kFoo, 3, 0));
  ASSERT_TRUE(WaitForCapacity(kBar, 3, 0));
  EXPECT_TRUE(manager_->GetAllocatableDevices().empty());
}

// What PodResources' AllocatableCache keeps its parts by: a resource's revision changes with its
// devices (health, a disconnection) and with nothing else; a resource removed has none.
TEST_F(ManagerTest, AllocatableRevisionsChangeWithEachResourcesDevices) {
  StartManager();
  PluginPtr p1 = StartPlugin("p1.sock", kResource1, {MakeDevice("A", true, {0}), MakeDevice("B")});
  PluginPtr p2 = StartPlugin("p2.sock", kResource2, {MakeDevice("X")});
  ASSERT_TRUE(p1->Register(KubeletSocket()).ok());
  ASSERT_TRUE(p2->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 2));
  ASSERT_TRUE(WaitForCapacity(kResource2, 1, 1));
  const std::map<std::string, uint64_t> first = manager_->AllocatableRevisions();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(manager_->AllocatableRevisions(), first) << "nothing changed";
  auto ids = [](const DeviceMap& devices) {
    std::vector<std::string> out;
    for (const auto& [id, device] : devices) out.push_back(id);
    return out;
  };
  EXPECT_EQ(ids(manager_->GetAllocatableDevices(kResource1)),
            ids(manager_->GetAllocatableDevices()[kResource1]));
  EXPECT_EQ(manager_->GetAllocatableDevices(kResource1).at("A").numa_nodes,
            std::vector<int64_t>{0});

  p1->SetDevices({MakeDevice("A", true, {0}), MakeDevice("B", false)});
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 1));
  const std::map<std::string, uint64_t> flipped = manager_->AllocatableRevisions();
  EXPECT_NE(flipped.at(kResource1), first.at(kResource1));
  EXPECT_EQ(flipped.at(kResource2), first.at(kResource2)) << "the other resource kept";
  EXPECT_EQ(ids(manager_->GetAllocatableDevices(kResource1)), std::vector<std::string>{"A"});

  p1->EndStreams();
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 0));
  const std::map<std::string, uint64_t> disconnected = manager_->AllocatableRevisions();
  EXPECT_NE(disconnected.at(kResource1), flipped.at(kResource1));
  EXPECT_TRUE(manager_->GetAllocatableDevices(kResource1).empty());

  clock_.Advance(kEndpointStopGracePeriod + absl::Seconds(1));
  EXPECT_EQ(manager_->GetCapacity().removed, std::vector<std::string>{kResource1});
  EXPECT_EQ(manager_->AllocatableRevisions(),
            (std::map<std::string, uint64_t>{{kResource2, first.at(kResource2)}}));
  EXPECT_TRUE(manager_->GetAllocatableDevices(kResource1).empty());
}

// A registration on the socket of its resource's live plugin replaces the endpoint, as upstream's
// classic handler: a plugin that restarted on its socket before its old stream's end was seen,
// or that registers again having given up waiting for the first answer, is served by the new
// connection, and the old stream's end does not disconnect it. (Upstream's newest handler keeps
// the old connection instead, refusing the registration, as its
// TestPluginConnected_SameResourceSameSocketRejected checks, and its TestSameSocketRace_* tests
// record that a plugin can then be lost; plugins on different sockets are the newest rule's,
// above.)
TEST_F(ManagerTest, TestDevicePluginReRegistration_SameSocketReplacesTheEndpoint) {
  StartManager();
  PluginPtr plugin = StartPlugin("p.sock", kResource1, {MakeDevice("a")});
  ASSERT_TRUE(plugin->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 1, 1));
  EndpointSharedPtr first = manager_->GetEndpoint(kResource1);
  EXPECT_TRUE(plugin->Register(KubeletSocket()).ok());
  EXPECT_EQ(plugin->get_options_calls(), 2) << "dialed again";
  EndpointSharedPtr second = manager_->GetEndpoint(kResource1);
  EXPECT_NE(second, first);
  EXPECT_TRUE(first->IsStopped());
  ASSERT_TRUE(WaitFor([&] {
    return plugin->list_and_watch_calls() == 2 && plugin->open_streams() == 1;
  })) << "the new stream started, the old one ended";
  EXPECT_FALSE(second->IsStopped());
  EXPECT_EQ(Allocatable(kResource1), 1);
}

// A plugin's new instance binds the socket path while the old one still serves its
// connection (a rolling update): the new registration is dialed at the path and reaches the
// new instance, not the old instance's open connection, and the old one's end changes nothing.
TEST_F(ManagerTest, ANewInstanceAtTheSameSocketIsReachedWhileTheOldOneStillServes) {
  StartManager();
  PluginPtr old_instance = StartPlugin("p.sock", kResource1, {MakeDevice("a")});
  ASSERT_TRUE(old_instance->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 1, 1));
  PluginPtr new_instance = StartPlugin("p.sock", kResource1, {MakeDevice("b"), MakeDevice("c")});
  ASSERT_TRUE(new_instance->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 2));
  EXPECT_EQ(new_instance->get_options_calls(), 1);
  EXPECT_EQ(old_instance->get_options_calls(), 1);
  ASSERT_TRUE(WaitFor([&] { return new_instance->open_streams() == 1; }));

  old_instance->Stop();
  EXPECT_FALSE(WaitFor([&] { return manager_->GetEndpoint(kResource1)->IsStopped(); },
                       std::chrono::milliseconds(300)));
  EXPECT_EQ(Allocatable(kResource1), 2);
}

TEST_F(ManagerTest, RegisterRejectsBadRequestsWithUpstreamTexts) {
  StartManager();
  PluginPtr plugin = StartPlugin("p.sock", kResource1, {MakeDevice("a")});
  absl::Status version = plugin->Register(KubeletSocket(), "v1alpha", kResource1, "p.sock");
  // The kubelet's refusals are plain Go errors, which gRPC sends as UNKNOWN.
  EXPECT_EQ(version.code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(version.message(),
            "requested API version \"v1alpha\" is not supported by kubelet. Supported version is "
            "[\"v1beta1\"]");
  absl::Status name = plugin->Register(KubeletSocket(), "v1beta1", "cpu", "p.sock");
  EXPECT_EQ(name.message(), "the ResourceName \"cpu\" is invalid");
  EXPECT_EQ(plugin->get_options_calls(), 0);
  EXPECT_TRUE(manager_->GetCapacity().capacity.empty());
}

TEST_F(ManagerTest, RegisterRefusesEndpointsOutsideThePluginFolder) {
  StartManager();
  TempDir elsewhere;
  FakeDevicePlugin outside(elsewhere.Sub("p.sock"), kResource1, {MakeDevice("a")});
  ASSERT_TRUE(outside.Start().ok());
  std::ofstream(dir_.Sub("not-a-socket")) << "x";
  const std::string up = "../" + elsewhere.path().filename().string() + "/p.sock";
  for (const std::string& endpoint :
       {up, elsewhere.Sub("p.sock").string(), std::string(), std::string(".."),
        std::string("not-a-socket"), std::string(300, 'x')}) {
    absl::Status status = outside.Register(KubeletSocket(), "v1beta1", kResource1, endpoint);
    EXPECT_FALSE(status.ok()) << endpoint;
    EXPECT_EQ(status.code(), absl::StatusCode::kUnknown) << endpoint << ": " << status;
  }
  EXPECT_EQ(outside.get_options_calls(), 0);
  EXPECT_TRUE(manager_->GetCapacity().capacity.empty());
}

TEST_F(ManagerTest, PluginThatNeverAnswersTheDialDoesNotBlockOthers) {
  ManagerOptions options = Options();
  options.dial_timeout = absl::Milliseconds(500);
  options.plugin_call_timeout = absl::Milliseconds(500);
  StartManager(options);
  ListeningSocket mute(dir_.Sub("mute.sock"));
  std::atomic<bool> mute_done{false};
  absl::Status mute_status;
  std::thread mute_registration([&] {
    FakeDevicePlugin registrar(dir_.Sub("unused.sock"), kResource1, {});
    mute_status = registrar.Register(KubeletSocket(), "v1beta1", kResource1, "mute.sock");
    mute_done = true;
  });
  PluginPtr good = StartPlugin("good.sock", kResource2, {MakeDevice("a")});
  ASSERT_TRUE(good->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource2, 1, 1));
  ASSERT_TRUE(WaitFor([&] { return mute_done.load(); }, std::chrono::seconds(10)));
  mute_registration.join();
  EXPECT_FALSE(mute_status.ok());
  EXPECT_TRUE(absl::StartsWith(mute_status.message(), "failed to ")) << mute_status;
  EXPECT_EQ(Capacity(kResource1), -1);
}

// Upstream dials each registering plugin on its Register call's own goroutine: plugins that
// hang in GetDevicePluginOptions (five here, for a minute each) hold up no other registration.
// Before, four connect threads were all there was, and the fifth hung plugin and the good one
// waited for them.
TEST_F(ManagerTest, PluginsThatHangInTheirDialDoNotHoldUpOthers) {
  ManagerOptions options = Options();
  options.plugin_call_timeout = absl::Minutes(1);
  StartManager(options);
  std::vector<PluginPtr> hung;
  std::vector<std::thread> registrations;
  for (int i = 0; i < 5; ++i) {
    hung.push_back(StartPlugin(absl::StrCat("hung-", i, ".sock"),
                               absl::StrCat("example.com/hung-", i), {MakeDevice("a")},
                               {.hang_get_options = true}));
    registrations.emplace_back(
        [&, plugin = hung.back().get()] { (void)plugin->Register(KubeletSocket()); });
  }
  // Each hung plugin is asked for its options (so holds a connect thread) before the good one
  // registers.
  EXPECT_TRUE(WaitFor([&] {
    return std::all_of(hung.begin(), hung.end(),
                       [](const PluginPtr& plugin) { return plugin->get_options_calls() > 0; });
  }));
  PluginPtr good = StartPlugin("good.sock", kResource2, {MakeDevice("a")});
  ASSERT_TRUE(good->Register(KubeletSocket()).ok());
  EXPECT_TRUE(WaitForCapacity(kResource2, 1, 1));
  // The hung dials end when the manager stops.
  manager_->Stop();
  for (std::thread& registration : registrations) registration.join();
}

TEST_F(ManagerTest, PluginThatNeverAnswersGetDevicePluginOptions) {
  ManagerOptions options = Options();
  options.plugin_call_timeout = absl::Milliseconds(300);
  StartManager(options);
  PluginPtr plugin =
      StartPlugin("hung.sock", kResource1, {MakeDevice("a")}, {.hang_get_options = true});
  const absl::Time start = absl::Now();
  absl::Status status = plugin->Register(KubeletSocket());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnknown);
  EXPECT_TRUE(absl::StartsWith(status.message(), "failed to get device plugin options: "))
      << status;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(Capacity(kResource1), -1);
  EXPECT_EQ(plugin->list_and_watch_calls(), 0);
}

std::vector<v1beta1::Device> LongIdDevices(int n) {
  std::vector<v1beta1::Device> devices;
  devices.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    std::string id = absl::StrCat("vf-", i, "-");
    id.resize(64, 'x');  // 64-byte IDs, as SR-IOV and vGPU plugins send
    devices.push_back(MakeDevice(id, true, {i % 2}));
  }
  return devices;
}

TEST_F(ManagerTest, PluginSendingHundredThousandDevices) {
  StartManager();
  PluginPtr plugin = StartPlugin("big.sock", kResource1, LongIdDevices(100'000));
  ASSERT_TRUE(plugin->Register(KubeletSocket()).ok());
  // Generous: sanitizer builds decode 100,000 devices slowly.
  ASSERT_TRUE(WaitForCapacity(kResource1, 100'000, 100'000, std::chrono::seconds(120)));
  EXPECT_EQ(manager_->GetAllocatableDevices()[kResource1].size(), 100'000u);
  manager_->Stop();
  auto data = ReadCheckpoint();
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->registered_devices[kResource1].size(), 100'000u);
}

TEST_F(ManagerTest, UpstreamMessageLimitWouldRefuseHundredThousandDevices) {
  ManagerOptions options = Options();
  options.max_message_bytes = 4 << 20;  // gRPC's default, which upstream keeps
  StartManager(options);
  PluginPtr plugin = StartPlugin("big.sock", kResource1, LongIdDevices(100'000));
  ASSERT_TRUE(plugin->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitFor([&] { return manager_->GetEndpoint(kResource1)->IsStopped(); },
                      std::chrono::seconds(120)));
  EXPECT_EQ(Allocatable(kResource1), -1);
}

TEST_F(ManagerTest, PluginFlappingHealthThousandTimes) {
  StartManager();
  std::vector<v1beta1::Device> devices = MakeDevices(8);
  PluginPtr plugin = StartPlugin("flap.sock", kResource1, devices);
  ASSERT_TRUE(plugin->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 8, 8));
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done) {
      CapacityResult result = manager_->GetCapacity();
      const int64_t allocatable = result.allocatable[kResource1];
      // Every snapshot has either all 8 healthy or the first 4 unhealthy.
      EXPECT_TRUE(allocatable == 8 || allocatable == 4) << allocatable;
      EXPECT_EQ(result.capacity[kResource1], 8);
    }
  });
  for (int i = 0; i < 1000; ++i) {
    for (int d = 0; d < 4; ++d)
      devices[static_cast<size_t>(d)].set_health(i % 2 == 0 ? "Unhealthy" : "Healthy");
    plugin->SetDevices(devices);
  }
  // The last flap (i = 999) made them healthy again.
  const bool settled = WaitForCapacity(kResource1, 8, 8);
  done = true;
  reader.join();
  ASSERT_TRUE(settled);
  devices[0].set_health("Unhealthy");
  plugin->SetDevices(devices);
  ASSERT_TRUE(WaitForCapacity(kResource1, 8, 7));
}

TEST_F(ManagerTest, FiftyPluginsRegisteringAtOnce) {
  StartManager();
  constexpr int kPlugins = 50;
  std::vector<PluginPtr> plugins;
  for (int i = 0; i < kPlugins; ++i) {
    plugins.push_back(StartPlugin(absl::StrCat("p", i, ".sock"),
                                  absl::StrCat("vendor", i, ".com/dev"), MakeDevices(i % 5 + 1)));
  }
  std::vector<absl::Status> results(kPlugins);
  std::vector<std::thread> threads;
  for (int i = 0; i < kPlugins; ++i) {
    threads.emplace_back([&, i] {
      results[static_cast<size_t>(i)] = plugins[static_cast<size_t>(i)]->Register(KubeletSocket());
    });
  }
  for (auto& thread : threads) thread.join();
  for (int i = 0; i < kPlugins; ++i)
    EXPECT_TRUE(results[static_cast<size_t>(i)].ok())
        << i << ": " << results[static_cast<size_t>(i)];
  ASSERT_TRUE(WaitFor([&] { return manager_->GetCapacity().capacity.size() == kPlugins; }));
  ASSERT_TRUE(WaitFor([&] {
    CapacityResult result = manager_->GetCapacity();
    for (int i = 0; i < kPlugins; ++i) {
      if (result.allocatable[absl::StrCat("vendor", i, ".com/dev")] != i % 5 + 1) return false;
    }
    return true;
  }));
}

TEST_F(ManagerTest, StopWhileStreamsAreActive) {
  StartManager();
  std::vector<PluginPtr> plugins;
  for (int i = 0; i < 10; ++i) {
    plugins.push_back(StartPlugin(absl::StrCat("p", i, ".sock"),
                                  absl::StrCat("vendor", i, ".com/dev"), MakeDevices(16)));
    ASSERT_TRUE(plugins.back()->Register(KubeletSocket()).ok());
  }
  // A registration stuck in GetDevicePluginOptions while Stop runs.
  PluginPtr hung = StartPlugin("hung.sock", kResource1, {}, {.hang_get_options = true});
  std::thread hung_registration([&] { (void)hung->Register(KubeletSocket()); });
  ASSERT_TRUE(WaitFor([&] { return hung->get_options_calls() == 1; }));
  ASSERT_TRUE(WaitFor([&] { return manager_->GetCapacity().capacity.size() == 10; }));
  std::atomic<bool> done{false};
  std::thread flapper([&] {
    for (int i = 0; !done; ++i) {
      plugins[static_cast<size_t>(i % 10)]->SetDevices(MakeDevices(i % 16 + 1));
    }
  });
  // Well under the 5 s call deadline: Stop cancels the stuck GetDevicePluginOptions.
  const absl::Time start = absl::Now();
  manager_->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  done = true;
  flapper.join();
  for (auto& plugin : plugins) {
    EXPECT_TRUE(WaitFor([&] { return plugin->open_streams() == 0; }));
  }
  hung->Stop();
  hung_registration.join();
  // The checkpoint written at Stop has every resource.
  auto data = ReadCheckpoint();
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->registered_devices.size(), 10u);
  manager_.reset();
}

// StopRegistrations, Stop's first part, for a host that stops its plugin watcher next: a
// RegisterPlugin call held by a plugin that never answers gives up at once (its deadline is 30 s
// here, beyond the test's wait), later registrations are refused on both paths, and a plugin
// already connected keeps its stream until Stop.
TEST_F(ManagerTest, StopRegistrationsCutsHandshakesShortAndKeepsConnectedPlugins) {
  ManagerOptions options = Options();
  options.plugin_call_timeout = absl::Seconds(30);
  StartManager(options);
  PluginPtr served = StartPlugin("served.sock", kResource1, {MakeDevice("a")});
  ASSERT_TRUE(served->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 1, 1));
  PluginPtr hung =
      StartPlugin("hung.sock", kResource2, {MakeDevice("x")}, {.hang_get_options = true});
  absl::Status hung_status;
  std::thread registering([&] {
    hung_status = manager_->RegisterPlugin(kResource2, hung->socket().string(), {"v1beta1"});
  });
  EXPECT_TRUE(WaitFor([&] { return hung->get_options_calls() == 1; }));  // no ASSERT: a thread

  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    manager_->StopRegistrations();
    stopped = true;
  });
  EXPECT_TRUE(WaitFor([&] { return stopped.load(); })) << "waited for the hung plugin";
  stopper.join();
  registering.join();
  EXPECT_EQ(hung_status.code(), absl::StatusCode::kCancelled) << hung_status;

  PluginPtr late = StartPlugin("late.sock", kResource2, {MakeDevice("y")});
  EXPECT_FALSE(late->Register(KubeletSocket(), absl::Seconds(1)).ok());
  EXPECT_EQ(manager_->RegisterPlugin(kResource2, late->socket().string(), {"v1beta1"}).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Capacity(kResource2), -1);
  served->SetDevices({MakeDevice("a"), MakeDevice("b")});
  EXPECT_TRUE(WaitForCapacity(kResource1, 2, 2));
  manager_->StopRegistrations();  // idempotent
  manager_->Stop();
  EXPECT_TRUE(WaitFor([&] { return served->open_streams() == 0; }));
}

TEST_F(ManagerTest, TestCheckpointRestoresAndKeepsAllocations) {
  // A checkpoint a kubelet wrote: one allocation and one registered resource.
  checkpoint::CheckpointData written;
  v1beta1::ContainerAllocateResponse response;
  (*response.mutable_envs())["A"] = "1";
  written.pod_device_entries.push_back(
      {"pod1", "con1", kResource1, {{0, {"dev1"}}}, response.SerializeAsString()});
  written.registered_devices[kResource1] = {"dev1", "dev2"};
  ASSERT_TRUE(FileStore(dir_.path())
                  .Write(checkpoint::kCheckpointFileName, checkpoint::Encode(written))
                  .ok());
  StartManager();
  EXPECT_TRUE(manager_->RestoredWholeCheckpoint());
  EXPECT_EQ(manager_->Allocations(), written.pod_device_entries);
  EXPECT_EQ(Capacity(kResource1), 0);
  EXPECT_EQ(Allocatable(kResource1), 0);
  ResourceDevices held = manager_->GetDevices("pod1", "con1");
  ASSERT_EQ(held[kResource1].size(), 1u);
  EXPECT_EQ(held[kResource1]["dev1"].numa_nodes, (std::vector<int64_t>{0}));
  EXPECT_EQ(held[kResource1]["dev1"].health, Health::kUnhealthy) << "no plugin yet";

  PluginPtr plugin = StartPlugin("p.sock", kResource1, {MakeDevice("dev1"), MakeDevice("dev3")});
  ASSERT_TRUE(plugin->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 2));
  EXPECT_EQ(manager_->GetDevices("pod1", "con1")[kResource1]["dev1"].health, Health::kHealthy);
  // The update was written, and the kubelet's allocation is still there.
  ASSERT_TRUE(WaitFor([&] {
    auto data = ReadCheckpoint();
    return data.ok() &&
           data->registered_devices[kResource1] == std::vector<std::string>{"dev1", "dev3"};
  }));
  auto data = ReadCheckpoint();
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->pod_device_entries, written.pod_device_entries);
}

// An entry whose Allocate answer does not parse is skipped, as upstream: the checkpoint lost it.
TEST_F(ManagerTest, ACheckpointEntryThatDoesNotParseIsAnEntryLost) {
  checkpoint::CheckpointData written;
  written.pod_device_entries.push_back(
      {"pod1", "con1", kResource1, {{0, {"dev1"}}}, std::string("\xff\xff\xff", 3)});
  ASSERT_TRUE(FileStore(dir_.path())
                  .Write(checkpoint::kCheckpointFileName, checkpoint::Encode(written))
                  .ok());
  StartManager();
  EXPECT_FALSE(manager_->RestoredWholeCheckpoint());
  EXPECT_TRUE(manager_->Allocations().empty());
}

// No checkpoint is a first start, which lost nothing; the kubelet logs it in these words
// (readCheckpoint on ErrCheckpointNotFound, as an error; here an info line) and goes on.
TEST_F(ManagerTest, AMissingCheckpointIsLoggedAndLosesNothing) {
  std::ostringstream log;
  ManagerOptions options = Options();
  options.logger = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  StartManager(std::move(options));
  EXPECT_TRUE(manager_->RestoredWholeCheckpoint());
  EXPECT_TRUE(manager_->Allocations().empty());
  EXPECT_TRUE(absl::StrContains(
      log.str(), R"("Failed to read data from checkpoint" err="checkpoint is not found")"
                 R"( checkpoint="kubelet_internal_checkpoint")"))
      << log.str();
  EXPECT_FALSE(absl::StrContains(log.str(), "Continue after failing")) << log.str();
  EXPECT_FALSE(absl::StrContains(log.str(), "[error]")) << "a first start is no error";
  manager_.reset();  // it logs until it stops
}

// A checkpoint that does not verify is copied aside for a human and ignored. The file itself
// stays until the next write replaces it: a start after a crash before that write finds it
// again and knows again that it lost entries (a file moved away would leave no checkpoint,
// which reads as one that lost nothing, and the host would forget the pods it recorded).
TEST_F(ManagerTest, CorruptCheckpointIsKeptAsideAndStartsEmpty) {
  const std::filesystem::path path = dir_.Sub(std::string(checkpoint::kCheckpointFileName));
  const std::string garbage =
      R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":{"a.io/x":[]}},"Checksum":1})";
  std::ofstream(path) << garbage;
  StartManager();
  EXPECT_FALSE(manager_->RestoredWholeCheckpoint()) << "what it held is lost";
  EXPECT_TRUE(manager_->GetCapacity().capacity.empty());
  std::filesystem::path aside = path;
  aside += ".corrupt";
  EXPECT_EQ(ReadWholeFile(aside).value_or(""), garbage);
  EXPECT_EQ(ReadWholeFile(path).value_or(""), garbage) << "left until the next write";

  // A second start before any write sees the same loss, as a start after the first was killed
  // would (the first still runs here, and writes nothing until it stops).
  ManagerImpl again(Options());
  ASSERT_TRUE(again.Start(nullptr, nullptr).ok());
  EXPECT_FALSE(again.RestoredWholeCheckpoint());
  again.Stop();
  EXPECT_EQ(ReadWholeFile(path).value_or(""), garbage) << "a stop that changed nothing";
  EXPECT_EQ(ReadWholeFile(aside).value_or(""), garbage) << "never overwritten";
  EXPECT_FALSE(std::filesystem::exists(
      dir_.Sub(std::string(checkpoint::kCheckpointFileName) + ".corrupt.1")))
      << "the same damaged bytes are kept once";
}

// A later damage is kept beside the copy of an earlier one, not over it: the first evidence of
// what went wrong on a node is what an operator needs most.
TEST_F(ManagerTest, ASecondCorruptCheckpointIsKeptBesideTheFirst) {
  const std::string name(checkpoint::kCheckpointFileName);
  const std::filesystem::path path = dir_.Sub(name);
  const std::string first = R"({"Data":{},"Checksum":1})";
  const std::string second = R"({"Data":{},"Checksum":2})";
  std::ofstream(path) << first;
  StartManager();
  EXPECT_FALSE(manager_->RestoredWholeCheckpoint());
  std::ofstream(path, std::ios::trunc) << second;
  ManagerImpl again(Options());
  ASSERT_TRUE(again.Start(nullptr, nullptr).ok());
  EXPECT_FALSE(again.RestoredWholeCheckpoint());
  again.Stop();
  EXPECT_EQ(ReadWholeFile(dir_.Sub(name + ".corrupt")).value_or(""), first);
  EXPECT_EQ(ReadWholeFile(dir_.Sub(name + ".corrupt.1")).value_or(""), second);
}

// A run that changed nothing (no plugin came back, no pod was admitted) leaves the checkpoint
// byte for byte as its start read it, as a kubelet does, which never writes at its stop. Before,
// the stop wrote it again, and the restored resources' registered devices, which stay empty
// until their plugins register again, were emptied in the file (a daemon whose start was
// refused after the manager's did that too).
TEST_F(ManagerTest, ARunThatChangedNothingLeavesTheCheckpointAsItFoundIt) {
  checkpoint::CheckpointData data;
  data.pod_device_entries.push_back({"pod-1", "app", kResource, {{0, {"Dev1"}}}, ""});
  data.registered_devices[kResource] = {"Dev1", "Dev2"};
  const std::string bytes = checkpoint::Encode(data);
  const std::filesystem::path file = dir_.Sub(std::string(checkpoint::kCheckpointFileName));
  std::ofstream(file, std::ios::binary) << bytes;
  StartManager();
  EXPECT_TRUE(manager_->RestoredWholeCheckpoint());
  manager_->Stop();
  EXPECT_EQ(ReadWholeFile(file).value_or(""), bytes);
}

TEST_F(ManagerTest, StartRemovesOnlyStaleSockets) {
  const std::filesystem::path folder = dir_.Sub("device-plugins");
  ManagerOptions options = Options();
  options.plugin_dir = folder;
  {
    // A fresh folder gets mode 0750.
    ManagerImpl first(options);
    ASSERT_TRUE(first.Start(nullptr, nullptr).ok());
    struct stat st {};
    ASSERT_EQ(::stat(folder.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0750u);
  }
  { ListeningSocket stale(folder / "stale.sock"); }
  ASSERT_TRUE(IsSocket(folder / "stale.sock"));
  ASSERT_TRUE(
      FileStore(folder).Write(checkpoint::kCheckpointFileName, checkpoint::Encode({})).ok());
  std::ofstream(folder / "notes.txt") << "keep";
  std::filesystem::create_directory(folder / "sub");
  StartManager(options);
  EXPECT_FALSE(std::filesystem::exists(folder / "stale.sock"));
  EXPECT_TRUE(std::filesystem::exists(folder / "notes.txt"));
  EXPECT_TRUE(std::filesystem::exists(folder / "sub"));
  EXPECT_TRUE(std::filesystem::exists(folder / std::string(checkpoint::kCheckpointFileName)));
}

// A checkpoint write killed before its rename leaves a temporary file beside the checkpoint;
// the next Start removes it when the checkpoint store is the manager's own, and leaves the
// folder to a host that brings its own store (the daemon's journal cleans it).
TEST_F(ManagerTest, StartRemovesTheTemporaryFilesOfInterruptedCheckpointWrites) {
  const std::filesystem::path folder = dir_.Sub("device-plugins");
  std::filesystem::create_directories(folder);
  const std::string left = absl::StrCat(".", checkpoint::kCheckpointFileName, ".tmp-Ab12Cd");
  ManagerOptions options = Options();
  options.plugin_dir = folder;

  std::ofstream(folder / left) << "half";
  ASSERT_TRUE(
      FileStore(folder).Write(checkpoint::kCheckpointFileName, checkpoint::Encode({})).ok());
  CheckpointStoreImpl host_store{FileStore(folder)};
  ManagerOptions hosted = options;
  hosted.checkpoint_store = &host_store;
  {
    ManagerImpl with_host_store(hosted);
    ASSERT_TRUE(with_host_store.Start(nullptr, nullptr).ok());
    EXPECT_TRUE(std::filesystem::exists(folder / left));
  }
  StartManager(options);
  EXPECT_FALSE(std::filesystem::exists(folder / left));
  EXPECT_TRUE(std::filesystem::exists(folder / std::string(checkpoint::kCheckpointFileName)));
}

TEST_F(ManagerTest, SubscribersHearOfChanges) {
  StartManager();
  std::atomic<int> calls{0};
  const int id = manager_->Subscribe([&] { ++calls; });
  PluginPtr plugin = StartPlugin("p.sock", kResource1, {MakeDevice("a")});
  ASSERT_TRUE(plugin->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitFor([&] { return calls.load() >= 1; }));
  const int before = calls.load();
  plugin->SetDevices({MakeDevice("a", false)});
  ASSERT_TRUE(WaitFor([&] { return calls.load() > before; }));
  manager_->Unsubscribe(id);
  const int after = calls.load();
  plugin->SetDevices({MakeDevice("a", true)});
  ASSERT_TRUE(WaitForCapacity(kResource1, 1, 1));
  manager_->Stop();
  EXPECT_EQ(calls.load(), after);
}

// A plugin that answers GetDevicePluginOptions and nothing else: its ListAndWatch fails before
// any message.
class OptionsOnlyPlugin final : public v1beta1::DevicePlugin::Service {
  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions*) override {
    return grpc::Status::OK;
  }
};

// RegisterSilentPlugin serves `service` at `socket` and registers it for kResource1 through
// `kubelet_socket`; null when it cannot.
std::unique_ptr<grpc::Server> RegisterSilentPlugin(OptionsOnlyPlugin& service,
                                                   const std::filesystem::path& socket,
                                                   const std::filesystem::path& kubelet_socket) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket.string(), grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) return nullptr;
  auto registration = v1beta1::Registration::NewStub(
      grpc::CreateChannel("unix:" + kubelet_socket.string(), grpc::InsecureChannelCredentials()));
  v1beta1::RegisterRequest request;
  request.set_version("v1beta1");
  request.set_endpoint(socket.filename().string());
  request.set_resource_name(kResource1);
  grpc::ClientContext context;
  v1beta1::Empty empty;
  if (!registration->Register(&context, request, &empty).ok()) return nullptr;
  return server;
}

// A plugin that went away before sending devices leaves its resource at capacity 0, without
// allocatable and without registered devices in the checkpoint, as upstream's empty set of
// unhealthy devices does, until the grace period ends: then the resource is reported removed
// (the host sets its capacity to 0) and its stopped endpoint goes with its connection. A plugin
// that registers again meanwhile and has not yet sent devices leaves it at 0 too. Before, the
// resource never showed and was never reported removed.
TEST_F(ManagerTest, APluginThatLeftWithoutDevicesLeavesItsResourceAtZeroUntilRemoved) {
  StartManager();
  OptionsOnlyPlugin service;
  std::unique_ptr<grpc::Server> server =
      RegisterSilentPlugin(service, dir_.Sub("silent.sock"), KubeletSocket());
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(WaitFor([&] {
    std::vector<ResourceSummary> summaries = manager_->GetResourceSummaries();
    return summaries.size() == 1 && summaries[0].state == EndpointState::kStopped;
  }));
  CapacityResult during = manager_->GetCapacity();
  EXPECT_EQ(during.capacity, (std::map<std::string, int64_t>{{kResource1, 0}}));
  EXPECT_TRUE(during.allocatable.empty());
  EXPECT_TRUE(during.removed.empty());
  EXPECT_TRUE(manager_->GetAllocatableDevices().empty());

  // Another plugin's devices make the checkpoint be written: it registers none for the first.
  PluginPtr other = StartPlugin("q.sock", kResource2, {MakeDevice("x")});
  ASSERT_TRUE(other->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitFor([&] {
    auto data = ReadCheckpoint();
    return data.ok() && data->registered_devices.contains(kResource2);
  }));
  EXPECT_FALSE(ReadCheckpoint()->registered_devices.contains(kResource1));

  // Registered again, still without devices: at 0 all the same.
  ASSERT_TRUE(
      manager_->RegisterPlugin(kResource1, dir_.Sub("silent.sock").string(), {"v1beta1"}).ok());
  EXPECT_EQ(manager_->GetCapacity().capacity.at(kResource1), 0);
  ASSERT_TRUE(WaitFor([&] { return manager_->GetEndpoint(kResource1)->IsStopped(); }));

  clock_.Advance(kEndpointStopGracePeriod + absl::Seconds(1));
  CapacityResult after = manager_->GetCapacity();
  EXPECT_EQ(after.removed, (std::vector<std::string>{kResource1}));
  EXPECT_FALSE(after.capacity.contains(kResource1));
  EXPECT_EQ(manager_->GetEndpoint(kResource1), nullptr);
  CapacityResult later = manager_->GetCapacity();
  EXPECT_TRUE(later.removed.empty());
  EXPECT_FALSE(later.capacity.contains(kResource1));
  server->Shutdown();
}

// A plugin that sends devices for a resource another plugin left at 0 is counted as any other,
// and the resource stays after the first one's grace period.
TEST_F(ManagerTest, APluginThatSendsDevicesAfterOneLeftWithoutAnyIsCounted) {
  StartManager();
  OptionsOnlyPlugin service;
  std::unique_ptr<grpc::Server> server =
      RegisterSilentPlugin(service, dir_.Sub("silent.sock"), KubeletSocket());
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(WaitFor([&] { return manager_->GetCapacity().capacity.contains(kResource1); }));
  PluginPtr plugin = StartPlugin("p.sock", kResource1, {MakeDevice("a"), MakeDevice("b", false)});
  ASSERT_TRUE(plugin->Register(KubeletSocket()).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 2, 1));
  clock_.Advance(kEndpointStopGracePeriod + absl::Seconds(1));
  EXPECT_TRUE(manager_->GetCapacity().removed.empty());
  EXPECT_EQ(Capacity(kResource1), 2);
  server->Shutdown();
}

TEST_F(ManagerTest, TestPluginDisconnected_WrongSocketIsNoop) {
  StartManager();
  PluginPtr plugin = StartPlugin("p.sock", kResource1, {MakeDevice("a")});
  ASSERT_TRUE(manager_->RegisterPlugin(kResource1, plugin->socket().string(), {"v1beta1"}).ok());
  ASSERT_TRUE(WaitForCapacity(kResource1, 1, 1));
  manager_->DeRegisterPlugin(kResource1, dir_.Sub("other.sock").string());
  manager_->DeRegisterPlugin("unknown.com/x", plugin->socket().string());
  EXPECT_FALSE(manager_->GetEndpoint(kResource1)->IsStopped());
  EXPECT_EQ(Allocatable(kResource1), 1);
}

}  // namespace
}  // namespace devmgr::devicemanager
