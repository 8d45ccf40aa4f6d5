// Pod admission against real gRPC fake plugins on temporary unix sockets: Allocate with init
// containers and sidecars, preferred allocation and NUMA affinity, PreStartContainer, run
// options, pod removal, rollback, the checkpoint across restarts, waiting for a plugin that
// comes back, and concurrent admission. Upstream scenarios (manager_test.go,
// topology_hints_test.go) keep their names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "checkpoint/checkpoint.h"
#include "common/file_store.h"
#include "devicemanager/checkpoint_store_impl.h"
#include "devicemanager/manager_impl.h"
#include "devicemanager/run_options.h"
#include "devicemanager/topology_hints.h"
#include "tests/testlib/fake_clock.h"
#include "tests/testlib/fake_device_plugin.h"
#include "tests/testlib/pods.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::devicemanager {
namespace {

using ::devmgr::testing::FakeClock;
using ::devmgr::testing::FakeDevicePlugin;
using ::devmgr::testing::MakeContainer;
using ::devmgr::testing::MakeDevice;
using ::devmgr::testing::MakeDevices;
using ::devmgr::testing::MakePod;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;
using PluginPtr = std::unique_ptr<FakeDevicePlugin>;

constexpr char kResource1[] = "domain1.com/resource1";
constexpr char kResource2[] = "domain2.com/resource2";

std::set<std::string> Ids(const ResourceDevices& devices, const std::string& resource) {
  std::set<std::string> ids;
  auto it = devices.find(resource);
  if (it == devices.end()) return ids;
  for (const auto& [id, device] : it->second) ids.insert(id);
  return ids;
}

bool Disjoint(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const auto& id : a) {
    if (b.contains(id)) return false;
  }
  return true;
}

bool Includes(const std::set<std::string>& outer, const std::set<std::string>& inner) {
  return std::includes(outer.begin(), outer.end(), inner.begin(), inner.end());
}

// A topology manager that admits a fixed affinity for every container.
class FixedAffinity : public TopologyAffinityStore {
 public:
  explicit FixedAffinity(std::optional<NumaMask> mask) : mask_(mask) {}
  std::optional<NumaMask> GetAffinity(absl::string_view, absl::string_view) const override {
    return mask_;
  }

 private:
  std::optional<NumaMask> mask_;
};

class AdmissionTest : public ::testing::Test {
 protected:
  ManagerOptions Options() {
    ManagerOptions options;
    options.plugin_dir = dir_.path();
    options.clock = &clock_;
    options.dial_timeout = absl::Seconds(5);
    options.plugin_call_timeout = absl::Seconds(5);
    options.checkpoint_write_delay = absl::Milliseconds(1);
    options.checkpoint_store = &store_;
    return options;
  }

  void StartManager() { StartManager(Options()); }
  void StartManager(ManagerOptions options) {
    manager_ = std::make_unique<ManagerImpl>(std::move(options));
    ASSERT_TRUE(manager_
                    ->Start(
                        [this] {
                          absl::MutexLock lock(&active_mu_);
                          ++active_reads_;
                          return std::vector<std::string>(active_.begin(), active_.end());
                        },
                        [this] { return sources_ready_.load(); })
                    .ok());
  }

  void SetActive(std::set<std::string> uids) {
    absl::MutexLock lock(&active_mu_);
    active_ = std::move(uids);
  }
  void AddActive(const std::string& uid) {
    absl::MutexLock lock(&active_mu_);
    active_.insert(uid);
  }

  // Starts a plugin, registers it and waits until the manager sees all its devices.
  PluginPtr StartPlugin(const std::string& socket_name, const std::string& resource,
                        std::vector<v1beta1::Device> devices,
                        FakeDevicePlugin::Options options = {}) {
    const int healthy = static_cast<int>(std::count_if(
        devices.begin(), devices.end(), [](const auto& d) { return d.health() == "Healthy"; }));
    const int total = static_cast<int>(devices.size());
    auto plugin = std::make_unique<FakeDevicePlugin>(dir_.Sub(socket_name), resource,
                                                     std::move(devices), options);
    EXPECT_TRUE(plugin->Start().ok());
    EXPECT_TRUE(plugin->Register(manager_->KubeletSocket()).ok());
    EXPECT_TRUE(WaitFor([&] {
      CapacityResult result = manager_->GetCapacity();
      return result.capacity[resource] == total && result.allocatable[resource] == healthy;
    }));
    return plugin;
  }

  absl::StatusOr<checkpoint::CheckpointData> ReadCheckpoint() const {
    auto bytes = ReadWholeFile(dir_.Sub(std::string(checkpoint::kCheckpointFileName)));
    if (!bytes.ok()) return bytes.status();
    return checkpoint::Decode(*bytes);
  }

  std::set<std::string> Held(const std::string& pod, const std::string& container,
                             const std::string& resource) {
    return Ids(manager_->GetDevices(pod, container), resource);
  }

  TempDir dir_;
  FakeClock clock_;
  std::atomic<bool> fail_writes_{false};
  // The checkpoint in dir_, as the manager keeps it by default, failing on demand.
  CheckpointStoreImpl store_{FileStore(dir_.path(), [this](FileStore::WriteStep step) {
    if (fail_writes_ && step == FileStore::WriteStep::kRename) {
      return absl::InternalError("injected write failure");
    }
    return absl::OkStatus();
  })};
  std::atomic<bool> sources_ready_{true};
  absl::Mutex active_mu_;
  std::set<std::string> active_ ABSL_GUARDED_BY(active_mu_);
  int active_reads_ ABSL_GUARDED_BY(active_mu_) = 0;
  std::unique_ptr<ManagerImpl> manager_;
};

// The plugin answers Allocate with one device node per device, one mount and one env.
FakeDevicePlugin::AllocateFn AnswerWith(const std::string& tag) {
  return [tag](const v1beta1::AllocateRequest& request, v1beta1::AllocateResponse* response) {
    for (const auto& container : request.container_requests()) {
      auto* out = response->add_container_responses();
      for (const auto& id : container.devices_ids()) {
        auto* device = out->add_devices();
        device->set_container_path("/dev/" + id);
        device->set_host_path("/dev/" + id);
        device->set_permissions("rw");
      }
      auto* mount = out->add_mounts();
      mount->set_container_path("/mnt/" + tag);
      mount->set_host_path("/host/" + tag);
      (*out->mutable_envs())["KEY_" + tag] = "value";
    }
    return grpc::Status::OK;
  };
}

TEST_F(AdmissionTest, TestPodContainerDeviceAllocation) {
  StartManager();
  PluginPtr p1 = StartPlugin("p1.sock", kResource1, MakeDevices(2, "a"));
  PluginPtr p2 = StartPlugin("p2.sock", kResource2, MakeDevices(1, "b"));
  p1->OnAllocate(AnswerWith("one"));
  p2->OnAllocate(AnswerWith("two"));

  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 2}, {kResource2, 1}})});
  AddActive("pod1");
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  EXPECT_EQ(p1->allocate_calls(), 1);
  EXPECT_EQ(p2->allocate_calls(), 1);
  auto options = manager_->GetDeviceRunContainerOptions(pod, pod.containers[0]);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->devices.size(), 3u);
  EXPECT_EQ(options->mounts.size(), 2u);
  EXPECT_EQ(options->envs.size(), 2u);
  // Resource order: domain1 before domain2, every time.
  EXPECT_EQ(options->mounts[0].container_path, "/mnt/one");
  EXPECT_EQ(Held("pod1", "c", kResource1), (std::set<std::string>{"a0", "a1"}));

  // A pod that needs more than what is left fails with upstream's text.
  Pod pod2 = MakePod("pod2", {MakeContainer("c", {{kResource1, 1}})});
  AddActive("pod2");
  absl::Status status = manager_->Allocate(pod2, pod2.containers[0]);
  EXPECT_EQ(status.message(),
            "requested number of devices unavailable for domain1.com/resource1. Requested: 1, "
            "Available: 0");
  EXPECT_TRUE(absl::IsResourceExhausted(status));

  // Resources no plugin ever registered are not device-plugin resources: skipped.
  Pod pod3 = MakePod("pod3", {MakeContainer("c", {{"example.com/other", 1}})});
  EXPECT_TRUE(manager_->Allocate(pod3, pod3.containers[0]).ok());
}

TEST_F(AdmissionTest, TestPodContainerDeviceToAllocate) {
  // A checkpoint holding a device of a resource that is not registered.
  checkpoint::CheckpointData written;
  written.pod_device_entries.push_back({"old", "c", "gone.com/res", {{-1, {"x"}}}, ""});
  ASSERT_TRUE(FileStore(dir_.path())
                  .Write(checkpoint::kCheckpointFileName, checkpoint::Encode(written))
                  .ok());
  SetActive({"old", "pod1", "pod2"});
  StartManager();
  Pod unregistered = MakePod("pod2", {MakeContainer("c", {{"gone.com/res", 1}})});
  EXPECT_EQ(manager_->Allocate(unregistered, unregistered.containers[0]).message(),
            "cannot allocate unregistered device gone.com/res");

  PluginPtr sick = StartPlugin("p2.sock", kResource2, {MakeDevice("s0", false)});
  Pod unhealthy = MakePod("pod2", {MakeContainer("c", {{kResource2, 1}})});
  EXPECT_EQ(manager_->Allocate(unhealthy, unhealthy.containers[0]).message(),
            "no healthy devices present; cannot allocate unhealthy devices domain2.com/resource2");

  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(3, "d"));
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}})});
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  // Allocating again is a no-op (a container restart).
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  EXPECT_EQ(plugin->allocate_calls(), 1);

  Pod changed = MakePod("pod1", {MakeContainer("c", {{kResource1, 2}})});
  EXPECT_EQ(manager_->Allocate(changed, changed.containers[0]).message(),
            "pod \"pod1\" container \"c\" changed request for resource \"domain1.com/resource1\" "
            "from 1 to 2");

  const std::string held = *Held("pod1", "c", kResource1).begin();
  std::vector<v1beta1::Device> devices;
  for (const std::string id : {"d0", "d1", "d2"}) devices.push_back(MakeDevice(id, id != held));
  plugin->SetDevices(devices);
  ASSERT_TRUE(WaitFor([&] { return manager_->GetCapacity().allocatable[kResource1] == 2; }));
  EXPECT_EQ(manager_->Allocate(pod, pod.containers[0]).message(),
            "previously allocated devices are no longer healthy; cannot allocate unhealthy "
            "devices domain1.com/resource1");
}

TEST_F(AdmissionTest, TestInitContainerDeviceAllocation) {
  StartManager();
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(4, "d"));
  Pod pod = MakePod(
      "pod1", {MakeContainer("app1", {{kResource1, 1}}), MakeContainer("app2", {{kResource1, 1}})},
      {MakeContainer("init1", {{kResource1, 1}}, ContainerType::kInit),
       MakeContainer("init2", {{kResource1, 2}}, ContainerType::kInit)});
  AddActive("pod1");
  ASSERT_TRUE(manager_->AdmitPod(pod).ok());
  auto init1 = Held("pod1", "init1", kResource1);
  auto init2 = Held("pod1", "init2", kResource1);
  auto app1 = Held("pod1", "app1", kResource1);
  auto app2 = Held("pod1", "app2", kResource1);
  EXPECT_EQ(init1.size(), 1u);
  EXPECT_EQ(init2.size(), 2u);
  EXPECT_EQ(app1.size(), 1u);
  EXPECT_EQ(app2.size(), 1u);
  EXPECT_TRUE(Includes(init2, init1)) << "init2 reuses init1's device";
  std::set<std::string> inits = init1;
  inits.insert(init2.begin(), init2.end());
  EXPECT_TRUE(Includes(inits, app1));
  EXPECT_TRUE(Includes(inits, app2));
  EXPECT_TRUE(Disjoint(app1, app2));
}

// Allocate takes the container's kind from the pod, as upstream finds the container in the
// pod's spec: a host that hands it a copy of an init container without its kind still has that
// container's devices reused by the app. Before, the copy's kind (an app's, by default) was
// taken, and the app needed devices of its own (here, more than the plugin has).
TEST_F(AdmissionTest, AllocateTakesTheContainersKindFromThePod) {
  StartManager();
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(2, "d"));
  Pod pod = MakePod("pod1", {MakeContainer("app", {{kResource1, 2}})},
                    {MakeContainer("init", {{kResource1, 2}}, ContainerType::kInit)});
  AddActive("pod1");
  ASSERT_TRUE(manager_->Allocate(pod, MakeContainer("init", {{kResource1, 2}})).ok());
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  EXPECT_EQ(Held("pod1", "app", kResource1), Held("pod1", "init", kResource1));
}

TEST_F(AdmissionTest, TestRestartableInitContainerDeviceAllocation) {
  StartManager();
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(6, "d"));
  Pod pod = MakePod(
      "pod1", {MakeContainer("app1", {{kResource1, 1}}), MakeContainer("app2", {{kResource1, 2}})},
      {MakeContainer("init", {{kResource1, 3}}, ContainerType::kInit),
       MakeContainer("sidecar1", {{kResource1, 1}}, ContainerType::kSidecar),
       MakeContainer("sidecar2", {{kResource1, 2}}, ContainerType::kSidecar)});
  AddActive("pod1");
  ASSERT_TRUE(manager_->AdmitPod(pod).ok());
  auto init = Held("pod1", "init", kResource1);
  std::vector<std::set<std::string>> keepers = {
      Held("pod1", "sidecar1", kResource1), Held("pod1", "sidecar2", kResource1),
      Held("pod1", "app1", kResource1), Held("pod1", "app2", kResource1)};
  EXPECT_EQ(init.size(), 3u);
  EXPECT_EQ(keepers[0].size(), 1u);
  EXPECT_EQ(keepers[1].size(), 2u);
  EXPECT_EQ(keepers[2].size(), 1u);
  EXPECT_EQ(keepers[3].size(), 2u);
  for (size_t i = 0; i < keepers.size(); ++i) {
    for (size_t j = i + 1; j < keepers.size(); ++j) EXPECT_TRUE(Disjoint(keepers[i], keepers[j]));
  }
  EXPECT_TRUE(Includes(init, keepers[0]));
  EXPECT_TRUE(Includes(init, keepers[1]));
}

TEST_F(AdmissionTest, TestDevicePreStartContainer) {
  StartManager();
  FakeDevicePlugin::Options plugin_options;
  plugin_options.pre_start_required = true;
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(3, "d"), plugin_options);
  std::vector<std::string> seen;
  absl::Mutex seen_mu;
  plugin->OnPreStartContainer([&](const v1beta1::PreStartContainerRequest& request) {
    absl::MutexLock lock(&seen_mu);
    seen.assign(request.devices_ids().begin(), request.devices_ids().end());
    return grpc::Status::OK;
  });
  plugin->OnAllocate(AnswerWith("one"));
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 2}})});
  AddActive("pod1");
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  auto options = manager_->GetDeviceRunContainerOptions(pod, pod.containers[0]);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(plugin->pre_start_calls(), 1);
  {
    absl::MutexLock lock(&seen_mu);
    EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()), Held("pod1", "c", kResource1));
  }
  EXPECT_EQ(options->devices.size(), 2u);

  // A limit of 0 skips PreStartContainer.
  Pod zero = MakePod("pod2", {MakeContainer("c", {{kResource1, 0}})});
  AddActive("pod2");
  ASSERT_TRUE(manager_->Allocate(zero, zero.containers[0]).ok());
  ASSERT_TRUE(manager_->GetDeviceRunContainerOptions(zero, zero.containers[0]).ok());
  EXPECT_EQ(plugin->pre_start_calls(), 1);

  // A failing PreStartContainer fails with upstream's prefix and grpc-go's text of the error.
  plugin->OnPreStartContainer([](const v1beta1::PreStartContainerRequest&) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "boom");
  });
  auto failed = manager_->GetDeviceRunContainerOptions(pod, pod.containers[0]);
  EXPECT_EQ(failed.status().message(),
            "device plugin PreStartContainer rpc failed with err: rpc error: code = Internal desc "
            "= boom");
}

TEST_F(AdmissionTest, TestGetDeviceRunContainerOptions) {
  StartManager();
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(2, "d"));
  plugin->OnAllocate(AnswerWith("one"));
  Pod pod1 = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}})});
  Pod pod2 = MakePod("pod2", {MakeContainer("c", {{kResource1, 1}})});
  SetActive({"pod1", "pod2"});
  ASSERT_TRUE(manager_->Allocate(pod1, pod1.containers[0]).ok());
  ASSERT_TRUE(manager_->Allocate(pod2, pod2.containers[0]).ok());
  auto options = manager_->GetDeviceRunContainerOptions(pod1, pod1.containers[0]);
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->devices.size(), 1u);

  SetActive({"pod2"});
  manager_->UpdateAllocatedDevices();
  options = manager_->GetDeviceRunContainerOptions(pod1, pod1.containers[0]);
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(*options, RunContainerOptions()) << "nothing cached: upstream's nil";
  EXPECT_TRUE(manager_->GetDevices("pod1", "c").empty());
  // Its device is free again.
  Pod pod3 = MakePod("pod3", {MakeContainer("c", {{kResource1, 1}})});
  AddActive("pod3");
  EXPECT_TRUE(manager_->Allocate(pod3, pod3.containers[0]).ok());
}

TEST_F(AdmissionTest, RunOptionsOfAnActiveContainerWithNothingCachedAllocateAgain) {
  StartManager();
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(2, "d"));
  plugin->OnAllocate(AnswerWith("one"));
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}})});
  // Not active: nothing is allocated, the options are empty.
  auto options = manager_->GetDeviceRunContainerOptions(pod, pod.containers[0]);
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(*options, RunContainerOptions());
  EXPECT_EQ(plugin->allocate_calls(), 0);
  // Active (the restart race upstream covers): allocated now.
  AddActive("pod1");
  options = manager_->GetDeviceRunContainerOptions(pod, pod.containers[0]);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(plugin->allocate_calls(), 1);
  EXPECT_EQ(options->devices.size(), 1u);
}

TEST_F(AdmissionTest, RunningContainerIsNotAllocatedAgainBeforeSourcesAreReady) {
  ManagerOptions options = Options();
  options.running_containers = {{"pod1", "c"}};
  sources_ready_ = false;
  StartManager(options);
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(2, "d"));
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}})});
  EXPECT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  EXPECT_EQ(plugin->allocate_calls(), 0);
  Pod other = MakePod("pod2", {MakeContainer("c", {{kResource1, 1}})});
  EXPECT_TRUE(manager_->Allocate(other, other.containers[0]).ok());
  EXPECT_EQ(plugin->allocate_calls(), 1);
}

TEST(RunOptionsTest, TestDeviceRunContainerOptions) {
  v1beta1::ContainerAllocateResponse empty;
  EXPECT_EQ(MergeRunContainerOptions({{"r", &empty}}, nullptr), RunContainerOptions());

  v1beta1::ContainerAllocateResponse a;
  (*a.mutable_envs())["B"] = "1";
  (*a.mutable_envs())["A"] = "1";
  (*a.mutable_annotations())["k"] = "a";
  a.add_cdi_devices()->set_name("vendor.com/gpu=0");
  a.add_cdi_devices()->set_name("vendor.com/gpu=0");
  auto* dev = a.add_devices();
  dev->set_container_path("/dev/x");
  dev->set_host_path("/dev/x");
  dev->set_permissions("mrw");
  auto* mount = a.add_mounts();
  mount->set_container_path("/m");
  mount->set_host_path("/h1");
  mount->set_read_only(true);

  v1beta1::ContainerAllocateResponse b;
  (*b.mutable_envs())["A"] = "2";  // conflicts: the first resource wins
  (*b.mutable_envs())["C"] = "3";
  (*b.mutable_annotations())["k"] = "b";
  b.add_cdi_devices()->set_name("vendor.com/gpu=0");
  b.add_cdi_devices()->set_name("other.com/nic=1");
  auto* dev2 = b.add_devices();
  dev2->set_container_path("/dev/x");
  dev2->set_host_path("/dev/y");
  auto* mount2 = b.add_mounts();
  mount2->set_container_path("/m");
  mount2->set_host_path("/h2");

  RunContainerOptions merged = MergeRunContainerOptions({{"a", &a}, {"b", &b}}, nullptr);
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(merged.envs, (Pairs{{"A", "1"}, {"B", "1"}, {"C", "3"}}));
  EXPECT_EQ(merged.annotations, (Pairs{{"k", "a"}}));
  EXPECT_EQ(merged.cdi_devices, (std::vector<std::string>{"vendor.com/gpu=0", "other.com/nic=1"}));
  EXPECT_EQ(merged.devices, (std::vector<DeviceOption>{{"/dev/x", "/dev/x", "mrw"}}));
  EXPECT_EQ(merged.mounts, (std::vector<MountOption>{{"/m", "/h1", true}}));
}

TEST(TopologyTest, TestFilterByAffinity) {
  const DeviceTable devices({{"dev1", Health::kHealthy, {1}},
                             {"dev2", Health::kHealthy, {1, 2}},
                             {"dev3", Health::kHealthy, {2}},
                             {"dev4", Health::kHealthy, {3}},
                             {"dev5", Health::kHealthy, {}}});
  const IdSet available({"dev1", "dev2", "dev3", "dev4", "dev5"});
  DevicesByAffinity split = FilterByAffinity(available, devices, NumaMask{1, 2});
  EXPECT_EQ(split.aligned, IdSet({"dev1", "dev2", "dev3"}));
  EXPECT_EQ(split.unaligned, IdSet({"dev4"}));
  EXPECT_EQ(split.no_topology, IdSet({"dev5"}));
  // Without an affinity everything is "no topology".
  split = FilterByAffinity(available, devices, std::nullopt);
  EXPECT_EQ(split.no_topology, available);
  EXPECT_TRUE(split.aligned.empty());
}

TEST_F(AdmissionTest, TestGetPreferredAllocationParameters) {
  StartManager();
  FakeDevicePlugin::Options plugin_options;
  plugin_options.get_preferred_allocation_available = true;
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(4, "d"), plugin_options);
  absl::Mutex mu;
  v1beta1::ContainerPreferredAllocationRequest seen;
  plugin->OnGetPreferredAllocation([&](const v1beta1::PreferredAllocationRequest& request,
                                       v1beta1::PreferredAllocationResponse* response) {
    absl::MutexLock lock(&mu);
    seen = request.container_requests(0);
    auto* out = response->add_container_responses();
    out->add_deviceids("d3");
    out->add_deviceids("d1");
    return grpc::Status::OK;
  });
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 2}})});
  AddActive("pod1");
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  EXPECT_EQ(plugin->preferred_calls(), 1);
  EXPECT_EQ(Held("pod1", "c", kResource1), (std::set<std::string>{"d1", "d3"}));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(seen.allocation_size(), 2);
  EXPECT_EQ(
      std::set<std::string>(seen.available_deviceids().begin(), seen.available_deviceids().end()),
      (std::set<std::string>{"d0", "d1", "d2", "d3"}));
  EXPECT_EQ(seen.must_include_deviceids_size(), 0);

  // An error of the call fails admission with upstream's prefix and grpc-go's text of it.
  plugin->OnGetPreferredAllocation(
      [](const v1beta1::PreferredAllocationRequest&, v1beta1::PreferredAllocationResponse*) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "no");
      });
  Pod pod2 = MakePod("pod2", {MakeContainer("c", {{kResource1, 1}})});
  AddActive("pod2");
  EXPECT_EQ(manager_->Allocate(pod2, pod2.containers[0]).message(),
            "device plugin GetPreferredAllocation rpc failed with err: rpc error: code = "
            "Unavailable desc = no");
}

TEST_F(AdmissionTest, TestTopologyAlignedAllocation) {
  FixedAffinity affinity(NumaMask{1});
  ManagerOptions options = Options();
  options.topology_affinity = &affinity;
  StartManager(options);
  PluginPtr plugin =
      StartPlugin("p1.sock", kResource1,
                  {MakeDevice("n0a", true, {0}), MakeDevice("n0b", true, {0}),
                   MakeDevice("n1a", true, {1}), MakeDevice("n1b", true, {1}), MakeDevice("none")});
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 2}})});
  AddActive("pod1");
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  EXPECT_EQ(Held("pod1", "c", kResource1), (std::set<std::string>{"n1a", "n1b"}));
  // Three more: none aligned is left, so unaligned before topology-less.
  Pod pod2 = MakePod("pod2", {MakeContainer("c", {{kResource1, 2}})});
  AddActive("pod2");
  ASSERT_TRUE(manager_->Allocate(pod2, pod2.containers[0]).ok());
  EXPECT_EQ(Held("pod2", "c", kResource1), (std::set<std::string>{"n0a", "n0b"}));
  // The NUMA node is in the checkpoint and in GetDevices.
  EXPECT_EQ(manager_->GetDevices("pod1", "c")[kResource1]["n1a"].numa_nodes,
            (std::vector<int64_t>{1}));
}

TEST_F(AdmissionTest, TestGetTopologyHints) {
  StartManager();
  PluginPtr plugin =
      StartPlugin("p1.sock", kResource1, {MakeDevice("a", true, {0}), MakeDevice("b", true, {1})});
  PluginPtr flat = StartPlugin("p2.sock", kResource2, MakeDevices(2, "f"));
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}, {kResource2, 1}})});
  AddActive("pod1");
  TopologyHints hints = manager_->GetTopologyHints(pod, pod.containers[0]);
  ASSERT_TRUE(hints.contains(kResource2));
  EXPECT_FALSE(hints[kResource2].has_value()) << "no topology: no preference";
  ASSERT_TRUE(hints[kResource1].has_value());
  EXPECT_EQ(*hints[kResource1],
            (std::vector<TopologyHint>{
                {NumaMask{0}, true}, {NumaMask{1}, true}, {NumaMask{0, 1}, false}}));
  Pod two = MakePod("pod2", {MakeContainer("c", {{kResource1, 2}})});
  EXPECT_EQ(*manager_->GetTopologyHints(two, two.containers[0])[kResource1],
            (std::vector<TopologyHint>{{NumaMask{0, 1}, true}}));
  Pod three = MakePod("pod3", {MakeContainer("c", {{kResource1, 3}})});
  EXPECT_TRUE(manager_->GetTopologyHints(three, three.containers[0])[kResource1]->empty());

  // Once allocated, the hints are regenerated from the container's devices.
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  const std::string held = *Held("pod1", "c", kResource1).begin();
  const NumaMask node = held == "a" ? NumaMask{0} : NumaMask{1};
  EXPECT_EQ(*manager_->GetTopologyHints(pod, pod.containers[0])[kResource1],
            (std::vector<TopologyHint>{{node, true}, {NumaMask{0, 1}, false}}));
}

// Beyond upstream: hints try every subset of the NUMA nodes, so a plugin that reports made-up
// node IDs must not make hint generation run for ever under the lock.
TEST_F(AdmissionTest, TopologyHintsPastTheNumaNodeLimitHaveNoPreference) {
  StartManager();
  std::vector<v1beta1::Device> eight;
  for (int node = 0; node < 8; ++node) {
    eight.push_back(MakeDevice("e" + std::to_string(node), true, {node}));
  }
  std::vector<v1beta1::Device> forty = {MakeDevice("negative", true, {-1}),
                                        MakeDevice("huge", true, {1'000'000})};
  for (int node = 0; node < 40; ++node) {
    forty.push_back(MakeDevice("f" + std::to_string(node), true, {node}));
  }
  PluginPtr at_limit = StartPlugin("p1.sock", kResource1, eight);
  PluginPtr hostile = StartPlugin("p2.sock", kResource2, forty);
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}, {kResource2, 1}})});
  AddActive("pod1");
  TopologyHints hints = manager_->GetTopologyHints(pod, pod.containers[0]);
  ASSERT_TRUE(hints[kResource1].has_value());
  EXPECT_EQ(hints[kResource1]->size(), 255u) << "every non-empty subset of 8 nodes";
  EXPECT_FALSE(hints[kResource2].has_value());
  EXPECT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
}

TEST_F(AdmissionTest, TestGetPodTopologyHints) {
  StartManager();
  PluginPtr plugin = StartPlugin(
      "p1.sock", kResource1,
      {MakeDevice("a", true, {0}), MakeDevice("b", true, {0}), MakeDevice("c", true, {1})});
  Pod pod = MakePod("pod1",
                    {MakeContainer("x", {{kResource1, 1}}), MakeContainer("y", {{kResource1, 1}})},
                    {MakeContainer("init", {{kResource1, 1}}, ContainerType::kInit)});
  TopologyHints hints = manager_->GetPodTopologyHints(pod);
  ASSERT_TRUE(hints[kResource1].has_value());
  EXPECT_EQ(*hints[kResource1],
            (std::vector<TopologyHint>{{NumaMask{0}, true}, {NumaMask{0, 1}, false}}));
}

TEST_F(AdmissionTest, TestDevicesToAllocateConflictWithUpdateAllocatedDevices) {
  StartManager();
  FakeDevicePlugin::Options plugin_options;
  plugin_options.get_preferred_allocation_available = true;
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(3, "d"), plugin_options);
  Pod old_pod = MakePod("old", {MakeContainer("c", {{kResource1, 1}})});
  SetActive({"old", "new"});
  ASSERT_TRUE(manager_->Allocate(old_pod, old_pod.containers[0]).ok());
  // While the plugin picks for the new pod, the old one leaves and is garbage-collected.
  plugin->OnGetPreferredAllocation([&](const v1beta1::PreferredAllocationRequest& request,
                                       v1beta1::PreferredAllocationResponse* response) {
    SetActive({"new"});
    manager_->UpdateAllocatedDevices();
    auto* out = response->add_container_responses();
    for (const auto& id : request.container_requests(0).available_deviceids()) {
      if (out->deviceids_size() < request.container_requests(0).allocation_size()) {
        out->add_deviceids(id);
      }
    }
    return grpc::Status::OK;
  });
  Pod new_pod = MakePod("new", {MakeContainer("c", {{kResource1, 1}})});
  ASSERT_TRUE(manager_->Allocate(new_pod, new_pod.containers[0]).ok());
  EXPECT_TRUE(manager_->GetDevices("old", "c").empty());
  EXPECT_EQ(Held("new", "c", kResource1).size(), 1u);
}

TEST_F(AdmissionTest, TestUpdatePluginResourcesAfterAllocation) {
  StartManager();
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(2, "d"));
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 2}})});
  AddActive("pod1");
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  // Allocated devices stay in the healthy set: allocatable is capacity, as upstream.
  CapacityResult capacity = manager_->GetCapacity();
  EXPECT_EQ(capacity.capacity[kResource1], 2);
  EXPECT_EQ(capacity.allocatable[kResource1], 2);
}

// Upstream's TestUpdatePluginResources: the pod holds one device of each resource; the node's
// allocatable has none of the first and two of the second. The first is raised to what is held,
// the second is left (never lowered); a pod that holds nothing gets the allocatable unchanged.
TEST_F(AdmissionTest, TestUpdatePluginResources) {
  StartManager();
  PluginPtr p1 = StartPlugin("p1.sock", kResource1, MakeDevices(2, "a"));
  PluginPtr p2 = StartPlugin("p2.sock", kResource2, MakeDevices(2, "b"));
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}, {kResource2, 1}})});
  AddActive("pod1");
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  const std::map<std::string, int64_t> node = {{kResource2, 2}};
  EXPECT_EQ(manager_->UpdatePluginResources("pod1", node),
            (std::map<std::string, int64_t>{{kResource1, 1}, {kResource2, 2}}));
  EXPECT_EQ(manager_->UpdatePluginResources("other", node), node);
  // The devices every pod holds count, not the pod's alone (upstream's allocatedDevices).
  Pod second = MakePod("pod2", {MakeContainer("c", {{kResource1, 1}})});
  AddActive("pod2");
  ASSERT_TRUE(manager_->Allocate(second, second.containers[0]).ok());
  EXPECT_EQ(manager_->UpdatePluginResources("pod1", node),
            (std::map<std::string, int64_t>{{kResource1, 2}, {kResource2, 2}}));
}

TEST_F(AdmissionTest, RollbackOnPluginErrorInSecondResource) {
  StartManager();
  PluginPtr p1 = StartPlugin("p1.sock", kResource1, MakeDevices(2, "a"));
  PluginPtr p2 = StartPlugin("p2.sock", kResource2, MakeDevices(2, "b"));
  p2->OnAllocate([](const v1beta1::AllocateRequest&, v1beta1::AllocateResponse*) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "plugin broke");
  });
  ASSERT_TRUE(WaitFor([&] { return ReadCheckpoint().ok(); }));
  const auto before = ReadCheckpoint();
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 2}, {kResource2, 1}})});
  AddActive("pod1");
  absl::Status status = manager_->Allocate(pod, pod.containers[0]);
  EXPECT_EQ(status.message(), "rpc error: code = Internal desc = plugin broke")
      << "the plugin's error as grpc-go prints it, which upstream returns as it is";
  EXPECT_EQ(p1->allocate_calls(), 1);
  EXPECT_TRUE(manager_->GetDevices("pod1", "c").empty());
  ASSERT_TRUE(ReadCheckpoint().ok());
  EXPECT_EQ(ReadCheckpoint()->pod_device_entries, before->pod_device_entries);
  EXPECT_TRUE(ReadCheckpoint()->pod_device_entries.empty());
  // resource1's devices are free again.
  Pod other = MakePod("pod2", {MakeContainer("c", {{kResource1, 2}})});
  AddActive("pod2");
  EXPECT_TRUE(manager_->Allocate(other, other.containers[0]).ok());
}

// An Allocate answer over gRPC's default 4 MiB, which a kubelet could not receive, refuses the
// admission with grpc-go's text and keeps nothing. Before, answers up to the channel's 64 MiB
// were kept with the pod and written into every checkpoint after it: a plugin's few such
// answers made a checkpoint of hundreds of megabytes, a journal of gigabytes, and every other
// admission on the node slow.
TEST_F(AdmissionTest, AnAllocateAnswerOverWhatAKubeletTakesIsRefused) {
  StartManager();
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(2, "a"));
  plugin->OnAllocate([](const v1beta1::AllocateRequest&, v1beta1::AllocateResponse* response) {
    (*response->add_container_responses()->mutable_envs())["BIG"] = std::string(5 << 20, 'x');
    return grpc::Status::OK;
  });
  ASSERT_TRUE(WaitFor([&] { return ReadCheckpoint().ok(); }));
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}})});
  AddActive("pod1");
  absl::Status status = manager_->Allocate(pod, pod.containers[0]);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_THAT(std::string(status.message()),
              ::testing::MatchesRegex("rpc error: code = ResourceExhausted desc = grpc: received "
                                      "message larger than max \\([0-9]+ vs\\. 4194304\\)"));
  EXPECT_TRUE(manager_->GetDevices("pod1", "c").empty());
  EXPECT_TRUE(ReadCheckpoint()->pod_device_entries.empty());
  // An answer of 4 MiB less a little is taken.
  plugin->OnAllocate([](const v1beta1::AllocateRequest&, v1beta1::AllocateResponse* response) {
    (*response->add_container_responses()->mutable_envs())["BIG"] =
        std::string((4 << 20) - 64, 'x');
    return grpc::Status::OK;
  });
  EXPECT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
}

TEST_F(AdmissionTest, FailedCheckpointWriteRollsBack) {
  StartManager();
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(1, "a"));
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}})});
  AddActive("pod1");
  fail_writes_ = true;
  absl::Status status = manager_->Allocate(pod, pod.containers[0]);
  EXPECT_EQ(status.message(), "injected write failure");
  EXPECT_TRUE(manager_->GetDevices("pod1", "c").empty());
  fail_writes_ = false;
  EXPECT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  auto data = ReadCheckpoint();
  ASSERT_TRUE(data.ok());
  ASSERT_EQ(data->pod_device_entries.size(), 1u);
}

TEST_F(AdmissionTest, AdmitPodReleasesEverythingOnFailure) {
  StartManager();
  PluginPtr p1 = StartPlugin("p1.sock", kResource1, MakeDevices(2, "a"));
  Pod pod = MakePod("pod1", {MakeContainer("app", {{kResource1, 3}})},
                    {MakeContainer("sidecar", {{kResource1, 1}}, ContainerType::kSidecar)});
  AddActive("pod1");
  absl::Status status = manager_->AdmitPod(pod);
  EXPECT_TRUE(absl::StartsWith(status.message(), "requested number of devices unavailable"));
  EXPECT_TRUE(manager_->GetDevices("pod1", "sidecar").empty());
  auto data = ReadCheckpoint();
  ASSERT_TRUE(data.ok());
  EXPECT_TRUE(data->pod_device_entries.empty());
}

// Beyond upstream: a host that knows a pod ended frees its devices durably at once, with no
// wait for the next garbage collection and write.
TEST_F(AdmissionTest, ReleasePodFreesDevicesAndWritesTheCheckpoint) {
  StartManager();
  PluginPtr p1 = StartPlugin("p1.sock", kResource1, MakeDevices(2, "a"));
  Pod pod = MakePod("pod1", {MakeContainer("app", {{kResource1, 2}})});
  Pod other = MakePod("pod2", {MakeContainer("app", {{kResource1, 1}})});
  SetActive({"pod1", "pod2"});
  ASSERT_TRUE(manager_->AdmitPod(pod).ok());
  EXPECT_EQ(manager_->AdmitPod(other).code(), absl::StatusCode::kResourceExhausted);

  ASSERT_TRUE(manager_->ReleasePod("pod1").ok());
  EXPECT_TRUE(manager_->GetDevices("pod1", "app").empty());
  auto data = ReadCheckpoint();
  ASSERT_TRUE(data.ok());
  EXPECT_TRUE(data->pod_device_entries.empty()) << "durable before ReleasePod returns";
  EXPECT_TRUE(manager_->ReleasePod("pod1").ok()) << "releasing nothing is fine";
  EXPECT_TRUE(manager_->AdmitPod(other).ok()) << "the devices are free, the pod still active";

  fail_writes_ = true;
  EXPECT_EQ(manager_->ReleasePod("pod2").message(), "injected write failure");
  EXPECT_TRUE(manager_->GetDevices("pod2", "app").empty()) << "freed even when the write fails";
}

// A pod found holding nothing may have had its devices freed in memory only: by a pass of
// UpdateAllocatedDevices (which writes nothing, as upstream's), or by a release whose write
// failed. Its release returns once that freeing is durable, so that a host that forgets the pod
// next never leaves a checkpoint that still holds its devices.
TEST_F(AdmissionTest, ReleasePodOfAPodFreedInMemoryOnlyMakesTheFreeingDurable) {
  ManagerOptions options = Options();
  options.checkpoint_write_delay = absl::Hours(1);  // no delayed write carries the freeing
  StartManager(std::move(options));
  PluginPtr p1 = StartPlugin("p1.sock", kResource1, MakeDevices(2, "a"));
  SetActive({"pod1", "pod2"});
  ASSERT_TRUE(manager_->AdmitPod(MakePod("pod1", {MakeContainer("app", {{kResource1, 1}})})).ok());
  ASSERT_TRUE(manager_->AdmitPod(MakePod("pod2", {MakeContainer("app", {{kResource1, 1}})})).ok());

  SetActive({"pod2"});
  manager_->UpdateAllocatedDevices();
  EXPECT_TRUE(manager_->GetDevices("pod1", "app").empty());
  auto data = ReadCheckpoint();
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->pod_device_entries.size(), 2u) << "the pass writes nothing";
  ASSERT_TRUE(manager_->ReleasePod("pod1").ok());
  data = ReadCheckpoint();
  ASSERT_TRUE(data.ok());
  ASSERT_EQ(data->pod_device_entries.size(), 1u);
  EXPECT_EQ(data->pod_device_entries[0].pod_uid, "pod2");

  fail_writes_ = true;
  EXPECT_FALSE(manager_->ReleasePod("pod2").ok());
  fail_writes_ = false;
  ASSERT_TRUE(manager_->ReleasePod("pod2").ok()) << "released again, the write is made";
  data = ReadCheckpoint();
  ASSERT_TRUE(data.ok());
  EXPECT_TRUE(data->pod_device_entries.empty());
}

// Stop marks every device unhealthy, waits for the loop and writes the checkpoint last. A pod
// released meanwhile (a host that keeps calling the manager as it stops) stays released in that
// last write, which keeps the devices the plugins last reported healthy, as each write since
// the marking does.
TEST_F(AdmissionTest, AReleaseWhileTheManagerStopsIsNotUndoneByTheLastWrite) {
  StartManager();
  PluginPtr p1 = StartPlugin("p1.sock", kResource1, MakeDevices(2, "a"));
  SetActive({"pod1"});
  ASSERT_TRUE(manager_->AdmitPod(MakePod("pod1", {MakeContainer("app", {{kResource1, 1}})})).ok());
  // A change callback that holds the loop, so that Stop waits in the middle.
  absl::Notification entered;
  absl::Notification resume;
  std::atomic<bool> hold{false};
  manager_->Subscribe([&] {
    if (hold.exchange(false)) {
      entered.Notify();
      resume.WaitForNotification();
    }
  });
  hold = true;
  p1->SetDevices(MakeDevices(3, "a"));
  ASSERT_TRUE(entered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  std::thread stopper([&] { manager_->Stop(); });
  const bool marked = WaitFor([&] { return manager_->GetCapacity().allocatable[kResource1] == 0; });
  const absl::Status released = marked ? manager_->ReleasePod("pod1") : absl::OkStatus();
  auto during = ReadCheckpoint();
  resume.Notify();
  stopper.join();
  ASSERT_TRUE(marked) << "Stop marks the devices unhealthy before it waits for the loop";
  ASSERT_TRUE(released.ok()) << released;
  ASSERT_TRUE(during.ok());
  EXPECT_TRUE(during->pod_device_entries.empty());
  EXPECT_EQ(during->registered_devices[kResource1].size(), 3u) << "as the plugin reported them";
  auto data = ReadCheckpoint();
  ASSERT_TRUE(data.ok());
  EXPECT_TRUE(data->pod_device_entries.empty()) << "the last write took the state as it was";
  EXPECT_EQ(data->registered_devices[kResource1].size(), 3u);
}

// Once Stop has returned the checkpoint is its last write: a release or a sync after it is
// refused and writes nothing (a daemon started next on the same folder may own the file by
// then). Before, the release was written.
TEST_F(AdmissionTest, AReleaseAfterStopIsRefusedAndWritesNothing) {
  StartManager();
  PluginPtr p1 = StartPlugin("p1.sock", kResource1, MakeDevices(2, "a"));
  SetActive({"pod1"});
  ASSERT_TRUE(manager_->AdmitPod(MakePod("pod1", {MakeContainer("app", {{kResource1, 1}})})).ok());
  manager_->Stop();
  const absl::Status released = manager_->ReleasePod("pod1");
  EXPECT_EQ(released.code(), absl::StatusCode::kFailedPrecondition) << released;
  EXPECT_EQ(manager_->SyncCheckpoint().code(), absl::StatusCode::kFailedPrecondition);
  auto data = ReadCheckpoint();
  ASSERT_TRUE(data.ok());
  ASSERT_EQ(data->pod_device_entries.size(), 1u);
  EXPECT_EQ(data->pod_device_entries[0].pod_uid, "pod1");
}

TEST_F(AdmissionTest, UpdateAllocatedDevicesPassesAgainOnlyAfterAChange) {
  std::atomic<uint64_t> revision{1};
  ManagerOptions options = Options();
  options.active_pods_revision = [&revision] { return revision.load(); };
  StartManager(std::move(options));
  PluginPtr p1 = StartPlugin("p1.sock", kResource1, MakeDevices(3, "a"));
  auto reads = [this] {
    absl::MutexLock lock(&active_mu_);
    return active_reads_;
  };
  SetActive({"pod1", "pod2"});
  Pod pod1 = MakePod("pod1", {MakeContainer("app", {{kResource1, 1}})});
  ASSERT_TRUE(manager_->AdmitPod(pod1).ok());

  const int before = reads();
  manager_->UpdateAllocatedDevices();
  EXPECT_EQ(reads(), before + 1) << "the first pass after an allocation";
  manager_->UpdateAllocatedDevices();
  manager_->UpdateAllocatedDevices();
  EXPECT_EQ(reads(), before + 1) << "nothing changed: no pass";

  // A pod leaves: the host's revision changes and the pass frees its devices.
  SetActive({"pod2"});
  ++revision;
  manager_->UpdateAllocatedDevices();
  EXPECT_EQ(reads(), before + 2);
  EXPECT_TRUE(manager_->GetDevices("pod1", "app").empty());

  // An allocation changes the allocations' revision: the next call passes again.
  Pod pod2 = MakePod("pod2", {MakeContainer("app", {{kResource1, 1}})});
  ASSERT_TRUE(manager_->AdmitPod(pod2).ok());
  const int admitted = reads();
  manager_->UpdateAllocatedDevices();
  EXPECT_EQ(reads(), admitted + 1);
  EXPECT_EQ(Held("pod2", "app", kResource1).size(), 1u);
  manager_->UpdateAllocatedDevices();
  EXPECT_EQ(reads(), admitted + 1);

  // Not ready: nothing is passed or remembered; once ready, the pass runs.
  sources_ready_ = false;
  SetActive({});
  ++revision;
  manager_->UpdateAllocatedDevices();
  EXPECT_EQ(Held("pod2", "app", kResource1).size(), 1u);
  sources_ready_ = true;
  manager_->UpdateAllocatedDevices();
  EXPECT_TRUE(manager_->GetDevices("pod2", "app").empty());
}

TEST_F(AdmissionTest, TestCheckpointRestartKeepsDevicesAndOptions) {
  StartManager();
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(4, "d"));
  plugin->OnAllocate(AnswerWith("one"));
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 2}})});
  SetActive({"pod1", "pod2"});
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  const auto held = Held("pod1", "c", kResource1);
  const auto options = manager_->GetDeviceRunContainerOptions(pod, pod.containers[0]);
  ASSERT_TRUE(options.ok());
  manager_->Stop();

  ManagerOptions restart = Options();
  restart.admission_wait = absl::Seconds(10);
  StartManager(restart);
  EXPECT_EQ(Held("pod1", "c", kResource1), held);
  auto restored = manager_->GetDeviceRunContainerOptions(pod, pod.containers[0]);
  ASSERT_TRUE(restored.ok());
  EXPECT_EQ(*restored, *options);

  // The plugin comes back (Start removed its socket: it serves again, as real plugins do when
  // kubelet.sock is re-created); the running container is not allocated again, a new pod gets
  // the other devices.
  plugin.reset();
  plugin = std::make_unique<FakeDevicePlugin>(dir_.Sub("p1.sock"), kResource1, MakeDevices(4, "d"));
  ASSERT_TRUE(plugin->Start().ok());
  std::thread again([&] {
    // Registers once the admission below waits for the plugin.
    EXPECT_TRUE(WaitFor([&] { return manager_->AdmissionsWaitingForPluginForTest() == 1; }));
    EXPECT_TRUE(plugin->Register(manager_->KubeletSocket()).ok());
  });
  EXPECT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  again.join();
  EXPECT_EQ(plugin->allocate_calls(), 0);
  Pod pod2 = MakePod("pod2", {MakeContainer("c", {{kResource1, 2}})});
  ASSERT_TRUE(manager_->Allocate(pod2, pod2.containers[0]).ok());
  EXPECT_TRUE(Disjoint(held, Held("pod2", "c", kResource1)));
}

TEST_F(AdmissionTest, RestoresAKubeletCheckpointAndItsOptions) {
  checkpoint::CheckpointData written;
  v1beta1::ContainerAllocateResponse response;
  (*response.mutable_envs())["VISIBLE"] = "dev1";
  response.add_cdi_devices()->set_name("vendor.com/gpu=dev1");
  written.pod_device_entries.push_back(
      {"kpod", "kc", kResource1, {{0, {"dev1"}}}, response.SerializeAsString()});
  written.registered_devices[kResource1] = {"dev1", "dev2"};
  ASSERT_TRUE(FileStore(dir_.path())
                  .Write(checkpoint::kCheckpointFileName, checkpoint::Encode(written))
                  .ok());
  SetActive({"kpod", "new"});
  StartManager();
  Pod kpod = MakePod("kpod", {MakeContainer("kc", {{kResource1, 1}})});
  auto options = manager_->GetDeviceRunContainerOptions(kpod, kpod.containers[0]);
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->envs, (std::vector<std::pair<std::string, std::string>>{{"VISIBLE", "dev1"}}));
  EXPECT_EQ(options->cdi_devices, (std::vector<std::string>{"vendor.com/gpu=dev1"}));
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, {MakeDevice("dev1"), MakeDevice("dev2")});
  Pod pod = MakePod("new", {MakeContainer("c", {{kResource1, 1}})});
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  EXPECT_EQ(Held("new", "c", kResource1), (std::set<std::string>{"dev2"}));
}

TEST_F(AdmissionTest, AdmissionWaitsForAPluginComingBack) {
  ManagerOptions options = Options();
  options.admission_wait = absl::Seconds(10);
  StartManager(options);
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(2, "d"));
  plugin->EndStreams();
  ASSERT_TRUE(WaitFor([&] { return manager_->GetCapacity().allocatable[kResource1] == 0; }));
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}})});
  AddActive("pod1");
  std::thread back([&] {
    // Registers once the admission below waits for the plugin.
    EXPECT_TRUE(WaitFor([&] { return manager_->AdmissionsWaitingForPluginForTest() == 1; }));
    EXPECT_TRUE(plugin->Register(manager_->KubeletSocket()).ok());
  });
  EXPECT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  back.join();
  EXPECT_EQ(Held("pod1", "c", kResource1).size(), 1u);
}

TEST_F(AdmissionTest, AdmissionWaitTimesOut) {
  ManagerOptions options = Options();
  options.admission_wait = absl::Milliseconds(300);
  StartManager(options);
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(2, "d"));
  plugin->EndStreams();
  ASSERT_TRUE(WaitFor([&] { return manager_->GetCapacity().allocatable[kResource1] == 0; }));
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}})});
  AddActive("pod1");
  const absl::Time start = absl::Now();
  absl::Status status = manager_->Allocate(pod, pod.containers[0]);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(290));
  EXPECT_EQ(status.message(),
            "no healthy devices present; cannot allocate unhealthy devices domain1.com/resource1");
}

// A host that ends its admission calls before it stops the manager (devmgr serve on SIGTERM:
// its admin server's shutdown waits for its calls) calls StopAdmissions first: an admission
// waiting for its plugin is refused at once, not after admission_wait, and later ones are
// refused before any wait. Before, the daemon's stop waited out the whole --admission-wait.
TEST_F(AdmissionTest, StopAdmissionsEndsAWaitForAPlugin) {
  ManagerOptions options = Options();
  options.admission_wait = absl::Hours(1);
  StartManager(options);
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(2, "d"));
  plugin->EndStreams();
  ASSERT_TRUE(WaitFor([&] { return manager_->GetCapacity().allocatable[kResource1] == 0; }));
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}})});
  Pod later = MakePod("pod2", {MakeContainer("c", {{kResource1, 1}})});
  SetActive({"pod1", "pod2"});
  absl::Status waited;
  std::atomic<bool> done{false};
  std::thread admission([&] {
    waited = manager_->Allocate(pod, pod.containers[0]);
    done = true;
  });
  ASSERT_TRUE(WaitFor([&] { return manager_->AdmissionsWaitingForPluginForTest() == 1; }));
  manager_->StopAdmissions();
  const bool ended = WaitFor([&] { return done.load(); });
  if (!ended) manager_->Stop();  // ends the wait, so that the test fails instead of hanging
  admission.join();
  ASSERT_TRUE(ended) << "the admission still waits for its plugin";
  EXPECT_EQ(waited, absl::UnavailableError("the device manager is stopping"));
  EXPECT_TRUE(manager_->GetDevices("pod1", "c").empty());
  EXPECT_EQ(manager_->Allocate(later, later.containers[0]),
            absl::FailedPreconditionError("the device manager is not running"));
}

TEST_F(AdmissionTest, HungPluginDoesNotBlockOtherResources) {
  ManagerOptions options = Options();
  options.plugin_call_timeout = absl::Seconds(2);
  StartManager(options);
  FakeDevicePlugin::Options hang;
  hang.hang_allocate = true;
  PluginPtr hung = StartPlugin("p1.sock", kResource1, MakeDevices(1, "a"), hang);
  PluginPtr fine = StartPlugin("p2.sock", kResource2, MakeDevices(1, "b"));
  SetActive({"slow", "fast"});
  Pod slow = MakePod("slow", {MakeContainer("c", {{kResource1, 1}})});
  Pod fast = MakePod("fast", {MakeContainer("c", {{kResource2, 1}})});
  absl::Status slow_status;
  std::atomic<bool> slow_done = false;
  std::thread slow_thread([&] {
    slow_status = manager_->Allocate(slow, slow.containers[0]);
    slow_done = true;
  });
  ASSERT_TRUE(WaitFor([&] { return hung->allocate_calls() == 1; }));
  EXPECT_TRUE(manager_->Allocate(fast, fast.containers[0]).ok());
  // Done while the hung call still waits out its deadline: the fast admission did not queue
  // behind it, however slowly this machine ran it.
  EXPECT_FALSE(slow_done.load());
  slow_thread.join();
  EXPECT_TRUE(absl::IsDeadlineExceeded(slow_status)) << slow_status;
  EXPECT_TRUE(manager_->GetDevices("slow", "c").empty());
}

TEST_F(AdmissionTest, SecondAdmissionOfTheSameContainerWhileTheFirstIsInFlightIsRefused) {
  ManagerOptions options = Options();
  options.plugin_call_timeout = absl::Seconds(1);
  StartManager(options);
  FakeDevicePlugin::Options hang;
  hang.hang_allocate = true;
  PluginPtr hung = StartPlugin("p1.sock", kResource1, MakeDevices(4, "a"), hang);
  AddActive("pod1");
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}})});
  absl::Status first;
  std::thread thread([&] { first = manager_->Allocate(pod, pod.containers[0]); });
  ASSERT_TRUE(WaitFor([&] { return hung->allocate_calls() == 1; }));
  absl::Status second = manager_->Allocate(pod, pod.containers[0]);
  EXPECT_TRUE(absl::IsAborted(second)) << second;
  thread.join();
  EXPECT_TRUE(absl::IsDeadlineExceeded(first)) << first;
  // Both left nothing behind: all four devices can be taken.
  Pod all = MakePod("pod2", {MakeContainer("c", {{kResource1, 4}})});
  AddActive("pod2");
  hung.reset();
  PluginPtr fine = StartPlugin("p2.sock", kResource1, MakeDevices(4, "a"));
  EXPECT_TRUE(manager_->Allocate(all, all.containers[0]).ok());
}

TEST_F(AdmissionTest, EightThreadsAdmitThousandPodsWithoutSharingADevice) {
  StartManager();
  std::vector<PluginPtr> plugins;
  std::vector<std::string> resources;
  for (int i = 0; i < 4; ++i) {
    resources.push_back(absl::StrCat("domain", i, ".com/res"));
    // Half the plugins offer GetPreferredAllocation: picking then spans an unlocked call.
    FakeDevicePlugin::Options plugin_options;
    plugin_options.get_preferred_allocation_available = i % 2 == 0;
    plugins.push_back(StartPlugin(absl::StrCat("p", i, ".sock"), resources.back(),
                                  MakeDevices(250, absl::StrCat("r", i, "-")), plugin_options));
  }
  constexpr int kPods = 1000;
  {
    absl::MutexLock lock(&active_mu_);
    for (int i = 0; i < kPods; ++i) active_.insert(absl::StrCat("pod", i));
  }
  std::atomic<int> next{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < kPods; i = next++) {
        Pod pod = MakePod(absl::StrCat("pod", i),
                          {MakeContainer("c", {{resources[static_cast<size_t>(i % 4)], 1}})});
        if (!manager_->AdmitPod(pod).ok()) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  auto data = ReadCheckpoint();
  ASSERT_TRUE(data.ok());
  ASSERT_EQ(data->pod_device_entries.size(), static_cast<size_t>(kPods));
  std::map<std::string, std::set<std::string>> seen;
  for (const auto& entry : data->pod_device_entries) {
    for (const auto& [numa, ids] : entry.device_ids) {
      for (const auto& id : ids) {
        EXPECT_TRUE(seen[entry.resource_name].insert(id).second) << "handed out twice: " << id;
      }
    }
  }
  // Every device is taken: one more pod is refused.
  Pod extra = MakePod("extra", {MakeContainer("c", {{resources[0], 1}})});
  AddActive("extra");
  EXPECT_TRUE(absl::IsResourceExhausted(manager_->AdmitPod(extra)));
}

TEST_F(AdmissionTest, RestartMidWayKeepsEveryAllocation) {
  StartManager();
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(20, "d"));
  for (int i = 0; i < 20; ++i) AddActive(absl::StrCat("pod", i));
  std::set<std::string> first;
  for (int i = 0; i < 10; ++i) {
    Pod pod = MakePod(absl::StrCat("pod", i), {MakeContainer("c", {{kResource1, 1}})});
    ASSERT_TRUE(manager_->AdmitPod(pod).ok());
    auto held = Held(pod.uid, "c", kResource1);
    first.insert(held.begin(), held.end());
  }
  manager_->Stop();
  StartManager();
  plugin.reset();
  plugin =
      std::make_unique<FakeDevicePlugin>(dir_.Sub("p1.sock"), kResource1, MakeDevices(20, "d"));
  ASSERT_TRUE(plugin->Start().ok());
  ASSERT_TRUE(plugin->Register(manager_->KubeletSocket()).ok());
  ASSERT_TRUE(WaitFor([&] { return manager_->GetCapacity().allocatable[kResource1] == 20; }));
  std::set<std::string> all = first;
  for (int i = 10; i < 20; ++i) {
    Pod pod = MakePod(absl::StrCat("pod", i), {MakeContainer("c", {{kResource1, 1}})});
    ASSERT_TRUE(manager_->AdmitPod(pod).ok());
    for (const auto& id : Held(pod.uid, "c", kResource1)) {
      EXPECT_TRUE(all.insert(id).second) << id;
    }
  }
  EXPECT_EQ(all.size(), 20u);
}

}  // namespace
}  // namespace devmgr::devicemanager
