// The node side assembled as the daemon assembles it: the real Manager, the real plugin watcher
// with the "DevicePlugin" handler, and real device plugins built on the SDK (in-process and as
// `devmgr plugin fake` processes), all on unix sockets in a temporary root.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include "devicemanager/manager.h"
#include "deviceplugin/plugin.h"
#include "node/device_plugin_handler.h"
#include "pluginwatcher/watcher.h"
#include "tests/pluginwatcher/fake_registration_plugin.h"
#include "tests/testlib/fake_device_plugin.h"
#include "tests/testlib/pods.h"
#include "tests/testlib/subprocess.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr {
namespace {

using deviceplugin::DeviceInfo;
using deviceplugin::DeviceTree;
using deviceplugin::Health;
using deviceplugin::Plugin;
using deviceplugin::PluginOptions;
using deviceplugin::RegistrationMode;
using testing::MakeContainer;
using testing::MakePod;
using testing::TempDir;
using testing::WaitFor;

constexpr char kResource[] = "example.com/gpu";

DeviceTree GpuTree(int count, Health health = Health::kHealthy) {
  DeviceTree tree;
  for (int i = 0; i < count; ++i) {
    DeviceInfo info;
    info.health = health;
    info.numa_nodes = {i % 2};
    tree.AddDevice("gpu", "gpu" + std::to_string(i), info);
  }
  return tree;
}

class NodeTest : public ::testing::Test {
 protected:
  std::filesystem::path PluginDir() const { return root_.Sub("device-plugins"); }
  std::filesystem::path RegistryDir() const { return root_.Sub("plugins_registry"); }

  void StartManager() {
    devicemanager::ManagerOptions options;
    options.plugin_dir = PluginDir();
    manager_ = devicemanager::CreateManager(options);
    ASSERT_TRUE(manager_->Start([this] { return active_pods_; }, [] { return true; }).ok());
  }

  void StartWatcher() {
    handler_ = std::make_unique<node::DevicePluginHandler>(*manager_);
    pluginwatcher::WatcherOptions options = pluginwatcher::WatcherOptions::ForRootDir(root_.path());
    options.initial_backoff = absl::Milliseconds(20);
    watcher_ = pluginwatcher::CreateWatcher(options);
    watcher_->AddHandler(pluginwatcher::kDevicePlugin, *handler_);
    ASSERT_TRUE(watcher_->Start().ok());
  }

  std::unique_ptr<Plugin> StartPlugin(RegistrationMode mode, DeviceTree tree,
                                      PluginOptions options = {}) {
    options.resource_namespace = "example.com";
    options.registration = mode;
    options.plugin_dir = PluginDir();
    options.registry_dir = RegistryDir();
    options.check_interval = absl::Milliseconds(20);
    absl::StatusOr<std::unique_ptr<Plugin>> plugin = Plugin::Start(options, nullptr);
    EXPECT_TRUE(plugin.ok()) << plugin.status();
    if (!plugin.ok()) return nullptr;
    (*plugin)->Notify(std::move(tree));
    return *std::move(plugin);
  }

  int64_t Capacity() { return Lookup(manager_->GetCapacity().capacity); }
  int64_t Allocatable() { return Lookup(manager_->GetCapacity().allocatable); }

  void TearDown() override {
    if (watcher_ != nullptr) watcher_->Stop();
    if (manager_ != nullptr) manager_->Stop();
  }

  TempDir root_;
  // Pods the host lists as active; set before StartManager, read by the Manager's threads.
  std::vector<std::string> active_pods_;
  devicemanager::ManagerPtr manager_;
  std::unique_ptr<node::DevicePluginHandler> handler_;
  pluginwatcher::WatcherPtr watcher_;

 private:
  static int64_t Lookup(const std::map<std::string, int64_t>& counts) {
    auto it = counts.find(kResource);
    return it == counts.end() ? -1 : it->second;
  }
};

// Upstream's scenario through the real watcher: a plugin registered by plugins_registry, then
// replaced by one with the same devices (capacity unchanged), then by one with fewer devices
// (the previous plugin's devices are gone). The SDK names a plugin's registry socket after its
// resource, so each replacement follows the previous plugin's exit, as a restarted plugin does.
TEST_F(NodeTest, TestDevicePluginReRegistrationProbeMode) {
  StartManager();
  StartWatcher();
  auto first = StartPlugin(RegistrationMode::kPluginsRegistry, GpuTree(2));
  ASSERT_TRUE(WaitFor([&] { return Allocatable() == 2; })) << Allocatable();
  ASSERT_TRUE(WaitFor([&] { return !first->Served().empty() && first->Served()[0].registered; }));

  first.reset();  // its registry socket disappears: the watcher deregisters it
  ASSERT_TRUE(WaitFor([&] { return Allocatable() == 0; }));
  EXPECT_EQ(Capacity(), 2) << "capacity is kept during the grace period";

  auto second = StartPlugin(RegistrationMode::kPluginsRegistry, GpuTree(2));
  ASSERT_TRUE(WaitFor([&] { return Allocatable() == 2; }));
  EXPECT_EQ(Capacity(), 2);
  second.reset();
  ASSERT_TRUE(WaitFor([&] { return Allocatable() == 0; }));

  auto third = StartPlugin(RegistrationMode::kPluginsRegistry, GpuTree(1));
  ASSERT_TRUE(WaitFor([&] { return Capacity() == 1 && Allocatable() == 1; }))
      << "devices of the previous plugin are removed: " << Capacity();
}

TEST_F(NodeTest, TestNewManagerImplStartProbeMode) {
  StartManager();
  StartWatcher();
  auto plugin = StartPlugin(RegistrationMode::kPluginsRegistry, GpuTree(3));
  ASSERT_TRUE(WaitFor([&] { return Allocatable() == 3; }));
  ASSERT_EQ(watcher_->GetRegisteredPlugins().size(), 1U);
  EXPECT_EQ(watcher_->GetRegisteredPlugins()[0].name, kResource);
  // Stopping is safe in any order and twice.
  watcher_->Stop();
  manager_->Stop();
  manager_->Stop();
}

// A plugin found in plugins_registry that never answers GetDevicePluginOptions holds the
// watcher's handler call for the plugin call timeout (30 s, after a dial of up to 10 s). Stopped
// in the order EMBEDDING.md gives (the Manager's registrations, the watcher, the Manager), the
// node does not wait it out: the handshake is cut short. Before StopRegistrations, the watcher's
// Stop waited the 30 s.
TEST_F(NodeTest, StoppingDoesNotWaitOutAHungPluginsHandshake) {
  StartManager();
  StartWatcher();
  std::filesystem::create_directories(root_.Sub("plugins/hung"));
  testing::FakeDevicePlugin hung(root_.Sub("plugins/hung/dp.sock"), kResource,
                                 testing::MakeDevices(1), {.hang_get_options = true});
  ASSERT_TRUE(hung.Start().ok());
  testing::FakeRegistrationPlugin registrar(
      RegistryDir() / "hung.sock",
      testing::MakeInfo(pluginwatcher::kDevicePlugin, kResource,
                        root_.Sub("plugins/hung/dp.sock").string(), {"v1beta1"}));
  ASSERT_TRUE(registrar.Serve().ok());
  ASSERT_TRUE(WaitFor([&] { return hung.get_options_calls() == 1; }));

  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    manager_->StopRegistrations();
    watcher_->Stop();
    manager_->Stop();
    stopped = true;
  });
  EXPECT_TRUE(WaitFor([&] { return stopped.load(); })) << "still waiting on the hung plugin";
  stopper.join();
  EXPECT_EQ(hung.get_options_calls(), 1);
  EXPECT_TRUE(manager_->GetCapacity().capacity.empty());
}

TEST_F(NodeTest, SdkPluginRegistersOnKubeletSocketAndFollowsHealth) {
  StartManager();
  auto plugin = StartPlugin(RegistrationMode::kKubeletSocket, GpuTree(4));
  ASSERT_TRUE(WaitFor([&] { return Allocatable() == 4; }));
  DeviceTree tree = GpuTree(3);
  DeviceInfo sick;
  sick.health = Health::kUnhealthy;
  tree.AddDevice("gpu", "gpu3", sick);
  plugin->Notify(std::move(tree));
  ASSERT_TRUE(WaitFor([&] { return Allocatable() == 3 && Capacity() == 4; }));
  const auto devices = manager_->GetAllocatableDevices();
  ASSERT_EQ(devices.count(kResource), 1U);
  EXPECT_EQ(devices.at(kResource).size(), 3U);
}

// A new Manager on the same folder removes the old sockets; the live plugin notices, serves a
// fresh socket and registers again by itself.
TEST_F(NodeTest, ManagerRestartUnderALivePluginReRegistersIt) {
  StartManager();
  auto plugin = StartPlugin(RegistrationMode::kKubeletSocket, GpuTree(2));
  ASSERT_TRUE(WaitFor([&] { return Allocatable() == 2; }));
  manager_->Stop();
  manager_.reset();
  StartManager();
  EXPECT_EQ(Allocatable(), 0) << "restored from the checkpoint as a stopped endpoint";
  ASSERT_TRUE(WaitFor([&] { return Allocatable() == 2; }, std::chrono::seconds(20)));
  // The plugin counts a registration when its Register call returns, which can be after the
  // manager, answering it, has dialed back and taken the devices.
  EXPECT_TRUE(WaitFor([&] { return plugin->Served()[0].registrations >= 2; }))
      << plugin->Served()[0].registrations;
}

// `devmgr plugin fake` as a separate process against the in-process Manager, both ways.
TEST_F(NodeTest, FakePluginProcessRegistersBothWays) {
  StartManager();
  StartWatcher();
  for (const bool registry : {false, true}) {
    std::vector<std::string> args = {testing::DevmgrBinary(),
                                     "plugin",
                                     "fake",
                                     "--root-dir",
                                     root_.path().string(),
                                     "--resource",
                                     kResource,
                                     "--devices",
                                     "5",
                                     "--numa-nodes",
                                     "2",
                                     "--check-interval",
                                     "50ms"};
    if (registry) args.push_back("--registry");
    testing::BackgroundProcess plugin(args);
    ASSERT_TRUE(plugin.started());
    const bool up = WaitFor([&] { return Allocatable() == 5; }, std::chrono::seconds(20));
    plugin.Signal(SIGTERM);
    const std::optional<int> code = plugin.Wait(std::chrono::seconds(20));
    ASSERT_TRUE(code.has_value()) << "the plugin ignored SIGTERM";
    ASSERT_TRUE(up) << (registry ? "registry" : "kubelet.sock") << ": " << Allocatable();
    EXPECT_EQ(*code, 0) << plugin.err();
    ASSERT_TRUE(WaitFor([&] { return Allocatable() == 0; })) << "the plugin's exit is noticed";
  }
}

// The SDK's hooks and CDI specs reach a container through the Manager's admission: the preferred
// allocation picks the devices, PostAllocate's annotation and the CDI names land in the run
// options, and PreStartContainer runs because the plugin asked for it.
class RecordingHooks final : public deviceplugin::PreferredAllocator,
                             public deviceplugin::PostAllocator,
                             public deviceplugin::ContainerPreStarter {
 public:
  deviceplugin::HookResult<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const std::string&, const v1beta1::PreferredAllocationRequest& request) override {
    // The last devices offered, to tell this choice apart from any default order.
    v1beta1::PreferredAllocationResponse response;
    for (const auto& container : request.container_requests()) {
      auto* picked = response.add_container_responses();
      const auto& offered = container.available_deviceids();
      for (int i = offered.size() - container.allocation_size(); i < offered.size(); ++i) {
        picked->add_deviceids(offered[i]);
      }
    }
    return response;
  }
  absl::Status PostAllocate(const std::string&, v1beta1::AllocateResponse& response) override {
    for (auto& container : *response.mutable_container_responses()) {
      (*container.mutable_annotations())["example.com/post"] = "yes";
    }
    return absl::OkStatus();
  }
  absl::Status PreStartContainer(const std::string&,
                                 const v1beta1::PreStartContainerRequest& request) override {
    pre_started_ += request.devices_ids_size();
    return absl::OkStatus();
  }
  int pre_started() const { return pre_started_.load(); }

 private:
  std::atomic<int> pre_started_{0};
};

TEST_F(NodeTest, SdkHooksAndCdiReachTheContainerThroughAdmission) {
  active_pods_ = {"uid-1"};
  StartManager();
  RecordingHooks hooks;
  PluginOptions options;
  options.hooks.preferred_allocator = &hooks;
  options.hooks.post_allocator = &hooks;
  options.hooks.pre_starter = &hooks;
  options.cdi = deviceplugin::CdiOptions{root_.Sub("cdi"), "example.com", ""};
  DeviceTree tree;
  for (int i = 0; i < 4; ++i) {
    DeviceInfo info;
    info.nodes = {{"/dev/null", "/dev/gpu" + std::to_string(i), "rw"}};
    info.envs = {{"GPU_" + std::to_string(i), "on"}};
    tree.AddDevice("gpu", "gpu" + std::to_string(i), info);
  }
  auto plugin = StartPlugin(RegistrationMode::kKubeletSocket, std::move(tree), options);
  ASSERT_TRUE(WaitFor([&] { return Allocatable() == 4; }));

  devicemanager::Pod pod = MakePod("uid-1", {MakeContainer("main", {{kResource, 2}})});
  pod.name = "p";
  ASSERT_TRUE(manager_->AdmitPod(pod).ok());
  const auto held = manager_->GetDevices("uid-1", "main").at(kResource);
  EXPECT_EQ(held.count("gpu2") + held.count("gpu3"), 2U) << "the preferred allocation was used";

  absl::StatusOr<devicemanager::RunContainerOptions> run =
      manager_->GetDeviceRunContainerOptions(pod, pod.containers[0]);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(hooks.pre_started(), 2);
  EXPECT_EQ(run->envs,
            (std::vector<std::pair<std::string, std::string>>{{"GPU_2", "on"}, {"GPU_3", "on"}}));
  ASSERT_EQ(run->devices.size(), 2U);
  EXPECT_EQ(run->devices[0].host_path, "/dev/null");
  EXPECT_EQ(run->annotations,
            (std::vector<std::pair<std::string, std::string>>{{"example.com/post", "yes"}}));
  EXPECT_EQ(run->cdi_devices,
            (std::vector<std::string>{"example.com/gpu=gpu2", "example.com/gpu=gpu3"}));
  EXPECT_FALSE(std::filesystem::is_empty(root_.Sub("cdi")));
}

TEST_F(NodeTest, SdkTreeOfHundredThousandDevicesAndThousandHealthFlips) {
  StartManager();
  DeviceTree big;
  for (int i = 0; i < 100000; ++i) big.AddDevice("gpu", "gpu-" + std::to_string(i), DeviceInfo{});
  auto plugin = StartPlugin(RegistrationMode::kKubeletSocket, big);
  ASSERT_TRUE(WaitFor([&] { return Allocatable() == 100000; }, std::chrono::seconds(60)))
      << Allocatable();
  // 1,000 flips of one device; the SDK sends the newest snapshot and the Manager ends in the
  // last state: the 1,000th flip leaves it healthy.
  for (int flip = 1; flip <= 1000; ++flip) {
    DeviceTree tree;
    DeviceInfo info;
    info.health = flip % 2 == 1 ? Health::kUnhealthy : Health::kHealthy;
    tree.AddDevice("gpu", "gpu-0", info);
    for (int i = 1; i < 100; ++i) tree.AddDevice("gpu", "gpu-" + std::to_string(i), DeviceInfo{});
    plugin->Notify(std::move(tree));
  }
  ASSERT_TRUE(
      WaitFor([&] { return Capacity() == 100 && Allocatable() == 100; }, std::chrono::seconds(60)))
      << Capacity() << " " << Allocatable();
}

}  // namespace
}  // namespace devmgr
