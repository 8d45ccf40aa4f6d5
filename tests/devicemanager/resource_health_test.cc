// Device health in pod status (KEP-4680, feature gate ResourceHealthStatus), driven in memory
// through the manager's seams: which pods a plugin's snapshot concerns, the bounded queue of
// updates the host takes (TakeResourceUpdates), and the health UpdateAllocatedResourcesStatus
// fills in. Upstream: genericDeviceUpdateCallback, Updates() and UpdateAllocatedResourcesStatus
// of pkg/kubelet/cm/devicemanager/manager.go, and their tests ported here by name.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "devicemanager/manager_impl.h"
#include "tests/devicemanager/fake_checkpoint_store.h"
#include "tests/devicemanager/fake_endpoint.h"
#include "tests/testlib/fake_clock.h"
#include "tests/testlib/listening_socket.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::devicemanager {
namespace {

using ::devmgr::testing::FakeCheckpointStore;
using ::devmgr::testing::FakeClock;
using ::devmgr::testing::FakeEndpoint;
using ::devmgr::testing::FakeEndpointFactory;
using ::devmgr::testing::ListeningSocket;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;

constexpr char kGpu[] = "domain1.com/gpu";
constexpr char kNic[] = "domain2.com/nic";

Device Healthy(const std::string& id) { return Device{id, Health::kHealthy, {}}; }
Device Unhealthy(const std::string& id) { return Device{id, Health::kUnhealthy, {}}; }

Container Asking(const std::string& name, const std::string& resource, int64_t count) {
  return Container{name, ContainerType::kRegular, {{resource, count}}};
}

Pod PodWith(const std::string& uid, std::vector<Container> containers) {
  return Pod{uid, "default", "pod-" + uid, {}, std::move(containers)};
}

PodStatus StatusOf(std::vector<std::string> container_names) {
  PodStatus status;
  for (std::string& name : container_names) status.container_statuses.push_back({name, {}});
  return status;
}

ResourceStatus Statuses(const std::string& resource,
                        std::vector<std::pair<std::string, ResourceHealth>> devices) {
  ResourceStatus status{resource, {}};
  for (auto& [id, health] : devices) status.resources.push_back({id, health});
  return status;
}

// Counts the updates the manager dropped.
class DropCounter final : public ManagerMetrics {
 public:
  void ResourceUpdateDropped() override { ++dropped; }
  std::atomic<int> dropped{0};
};

class ResourceHealthTest : public ::testing::Test {
 protected:
  void StartManager(bool gate) {
    ManagerOptions options;
    options.plugin_dir = dir_.path();
    options.clock = &clock_;
    options.checkpoint_write_delay = absl::Milliseconds(1);
    options.checkpoint_store = &store_;
    options.endpoint_factory = &factory_;
    options.metrics = &metrics_;
    options.resource_health_status = gate;
    manager_ = std::make_unique<ManagerImpl>(std::move(options));
    ASSERT_TRUE(manager_
                    ->Start(
                        [] {
                          return std::vector<std::string>{"pod1", "pod2", "pod3"};
                        },
                        [] { return true; })
                    .ok());
  }

  // Registers `resource` (probe mode on kubelet.sock, which exists) and sends `devices`.
  std::shared_ptr<FakeEndpoint> AddPlugin(const std::string& resource,
                                          std::vector<Device> devices) {
    EXPECT_TRUE(
        manager_->RegisterPlugin(resource, manager_->KubeletSocket().string(), {"v1beta1"}).ok());
    std::shared_ptr<FakeEndpoint> endpoint = factory_.endpoint(resource);
    EXPECT_NE(endpoint, nullptr);
    if (endpoint != nullptr) {
      EXPECT_TRUE(endpoint->PushDevices(std::move(devices)));
    }
    return endpoint;
  }

  void Admit(const Pod& pod) {
    for (const Container& container : pod.containers) {
      ASSERT_TRUE(manager_->Allocate(pod, container).ok()) << container.name;
    }
  }

  // The pod UIDs of every update queued since the last call, in order.
  std::vector<std::vector<std::string>> Updates() {
    std::vector<std::vector<std::string>> out;
    for (ResourceUpdate& update : manager_->TakeResourceUpdates()) {
      out.push_back(std::move(update.pod_uids));
    }
    return out;
  }

  TempDir dir_;
  FakeClock clock_;
  FakeCheckpointStore store_;
  FakeEndpointFactory factory_;
  DropCounter metrics_;
  // Last: stopped (by its destructor) before the fakes it uses go.
  std::unique_ptr<ManagerImpl> manager_;
};

using Uids = std::vector<std::vector<std::string>>;

// Upstream's TestFeatureGateResourceHealthStatus: with the gate on, every snapshot that changes
// the health of a held device queues an update, never waiting: of 200, the first 100 wait for
// the host and the rest are dropped (and counted). With the gate off nothing is queued.
TEST_F(ResourceHealthTest, TestFeatureGateResourceHealthStatus) {
  for (const bool gate : {true, false}) {
    SCOPED_TRACE(gate ? "gate on" : "gate off");
    StartManager(gate);
    auto endpoint = AddPlugin(kGpu, {Healthy("dev1")});
    Admit(PodWith("pod1", {Asking("c", kGpu, 1)}));
    ASSERT_TRUE(Updates().empty()) << "an admission is not a change of health";
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE(endpoint->PushDevices({i % 2 == 0 ? Unhealthy("dev1") : Healthy("dev1")}));
    }
    const Uids updates = Updates();
    if (gate) {
      EXPECT_EQ(updates, Uids(kResourceUpdatesCapacity, {"pod1"}));
      EXPECT_TRUE(WaitFor([&] { return metrics_.dropped.load() == 100; }))
          << metrics_.dropped.load();
    } else {
      EXPECT_TRUE(updates.empty());
      EXPECT_EQ(metrics_.dropped.load(), 0);
    }
    manager_.reset();
    metrics_.dropped = 0;
  }
}

// Which pods a snapshot concerns: those holding a device whose health changed or that the
// previous snapshot lacked; not those whose devices did not change, nor devices nobody holds.
TEST_F(ResourceHealthTest, OnlyPodsHoldingChangedDevicesAreUpdated) {
  StartManager(true);
  auto gpus = AddPlugin(kGpu, {Healthy("g0"), Healthy("g1"), Healthy("g2")});
  auto nics = AddPlugin(kNic, {Healthy("g0")});
  Admit(PodWith("pod1", {Asking("c", kGpu, 1)}));                        // g0
  Admit(PodWith("pod2", {Asking("a", kGpu, 1), Asking("b", kNic, 1)}));  // g1, nic g0
  ASSERT_TRUE(Updates().empty());

  ASSERT_TRUE(gpus->PushDevices({Healthy("g0"), Unhealthy("g1"), Healthy("g2")}));
  EXPECT_EQ(Updates(), Uids({{"pod2"}}));
  ASSERT_TRUE(gpus->PushDevices({Healthy("g0"), Unhealthy("g1"), Unhealthy("g2")}));
  EXPECT_TRUE(Updates().empty()) << "g2 is held by nobody";
  // The same ID under another resource is another device.
  ASSERT_TRUE(nics->PushDevices({Unhealthy("g0")}));
  EXPECT_EQ(Updates(), Uids({{"pod2"}}));
  // A held device vanishes (nothing to say: its health stays as last known), then returns.
  ASSERT_TRUE(gpus->PushDevices({Unhealthy("g1"), Unhealthy("g2")}));
  EXPECT_TRUE(Updates().empty());
  ASSERT_TRUE(gpus->PushDevices({Healthy("g0"), Unhealthy("g1"), Unhealthy("g2")}));
  EXPECT_EQ(Updates(), Uids({{"pod1"}}));
  // One snapshot touching both pods: one update naming each once.
  ASSERT_TRUE(gpus->PushDevices({Unhealthy("g0"), Healthy("g1"), Unhealthy("g2")}));
  EXPECT_EQ(Updates(), Uids({{"pod1", "pod2"}}));
}

// A plugin that goes away makes the health of its devices unknown (beyond upstream, which
// keeps the last report): the pods holding them are updated, and again when it comes back.
TEST_F(ResourceHealthTest, PluginAwayAndBackUpdatesItsPods) {
  StartManager(true);
  auto endpoint = AddPlugin(kGpu, {Healthy("g0"), Healthy("g1")});
  Admit(PodWith("pod1", {Asking("c", kGpu, 1)}));
  ASSERT_TRUE(Updates().empty());

  endpoint->EndStream(absl::UnavailableError("plugin exited"));
  EXPECT_EQ(Updates(), Uids({{"pod1"}}));
  PodStatus status = StatusOf({"c"});
  manager_->UpdateAllocatedResourcesStatus("pod1", status);
  EXPECT_EQ(status.container_statuses[0].allocated_resources_status,
            std::vector<ResourceStatus>{Statuses(kGpu, {{"g0", ResourceHealth::kUnknown}})});

  AddPlugin(kGpu, {Healthy("g0"), Healthy("g1")});
  EXPECT_EQ(Updates(), Uids({{"pod1"}}));
  status = StatusOf({"c"});
  manager_->UpdateAllocatedResourcesStatus("pod1", status);
  EXPECT_EQ(status.container_statuses[0].allocated_resources_status,
            std::vector<ResourceStatus>{Statuses(kGpu, {{"g0", ResourceHealth::kHealthy}})});
}

// A plugin that registers on another socket of the resource leaves the health of its devices as
// the plugin serving it reports it, until it reports itself. When the plugin whose report
// stands goes while the new one has sent nothing, the pods holding its devices are updated
// (Unknown), and again once the new one reports.
TEST_F(ResourceHealthTest, AHealthReportStandsUntilTheNextPluginReports) {
  StartManager(true);
  auto a = AddPlugin(kGpu, {Healthy("g0"), Healthy("g1")});
  Admit(PodWith("pod1", {Asking("c", kGpu, 1)}));
  ASSERT_TRUE(Updates().empty());
  const std::filesystem::path second = dir_.path() / "b.sock";
  ListeningSocket socket(second);
  ASSERT_TRUE(socket.listening());
  ASSERT_TRUE(manager_->RegisterPlugin(kGpu, second.string(), {"v1beta1"}).ok());
  std::shared_ptr<FakeEndpoint> b = factory_.endpoint(kGpu);
  ASSERT_NE(b, a);
  EXPECT_TRUE(Updates().empty());
  PodStatus status = StatusOf({"c"});
  manager_->UpdateAllocatedResourcesStatus("pod1", status);
  EXPECT_EQ(status.container_statuses[0].allocated_resources_status,
            std::vector<ResourceStatus>{Statuses(kGpu, {{"g0", ResourceHealth::kHealthy}})});

  a->EndStream(absl::UnavailableError("plugin exited"));
  EXPECT_EQ(Updates(), Uids({{"pod1"}}));
  status = StatusOf({"c"});
  manager_->UpdateAllocatedResourcesStatus("pod1", status);
  EXPECT_EQ(status.container_statuses[0].allocated_resources_status,
            std::vector<ResourceStatus>{Statuses(kGpu, {{"g0", ResourceHealth::kUnknown}})});

  ASSERT_TRUE(b->PushDevices({Healthy("g0"), Healthy("g1")}));
  EXPECT_EQ(Updates(), Uids({{"pod1"}}));
  status = StatusOf({"c"});
  manager_->UpdateAllocatedResourcesStatus("pod1", status);
  EXPECT_EQ(status.container_statuses[0].allocated_resources_status,
            std::vector<ResourceStatus>{Statuses(kGpu, {{"g0", ResourceHealth::kHealthy}})});
}

// Upstream's reserved-device case of TestGetPodAndContainerForDevice, at the manager's level:
// a device an admission has reserved but not committed belongs to no pod yet, so its health
// changes concern nobody; once committed they concern the pod.
TEST_F(ResourceHealthTest, ReservedDeviceHasNoOwnerUntilCommitted) {
  StartManager(true);
  auto endpoint = AddPlugin(kGpu, {Healthy("g0")});
  absl::Notification entered;
  absl::Notification release;
  endpoint->OnAllocate([&](const std::vector<std::string>&) {
    entered.Notify();
    release.WaitForNotification();
    v1beta1::AllocateResponse response;
    response.add_container_responses();
    return absl::StatusOr<v1beta1::AllocateResponse>(response);
  });
  const Pod pod = PodWith("pod1", {Asking("c", kGpu, 1)});
  absl::Status admitted;
  std::thread admission([&] { admitted = manager_->Allocate(pod, pod.containers[0]); });
  entered.WaitForNotification();
  ASSERT_TRUE(endpoint->PushDevices({Unhealthy("g0")}));
  EXPECT_TRUE(Updates().empty()) << "reserved, not yet held";
  release.Notify();
  admission.join();
  ASSERT_TRUE(admitted.ok()) << admitted;
  ASSERT_TRUE(endpoint->PushDevices({Healthy("g0")}));
  EXPECT_EQ(Updates(), Uids({{"pod1"}}));
}

// A queued update runs the change callbacks, where a host takes them.
TEST_F(ResourceHealthTest, QueuedUpdateRunsTheChangeCallbacks) {
  StartManager(true);
  auto endpoint = AddPlugin(kGpu, {Healthy("g0")});
  Admit(PodWith("pod1", {Asking("c", kGpu, 1)}));
  ASSERT_TRUE(Updates().empty());
  absl::Mutex mu;
  Uids taken;
  const int id = manager_->Subscribe([&] {
    for (ResourceUpdate& update : manager_->TakeResourceUpdates()) {
      absl::MutexLock lock(&mu);
      taken.push_back(std::move(update.pod_uids));
    }
  });
  ASSERT_TRUE(endpoint->PushDevices({Unhealthy("g0")}));
  EXPECT_TRUE(WaitFor([&] {
    absl::MutexLock lock(&mu);
    return taken == Uids({{"pod1"}});
  }));
  manager_->Unsubscribe(id);
}

// Upstream's TestUpdateAllocatedResourcesStatus: each container holding devices gets one
// ResourceStatus per resource with every device it holds and its health; an entry for the
// same resource is replaced, other entries and containers holding nothing are left alone.
TEST_F(ResourceHealthTest, TestUpdateAllocatedResourcesStatus) {
  StartManager(false);  // works whatever the gate says
  auto gpus = AddPlugin(kGpu, {Healthy("g0"), Healthy("g1"), Healthy("g2")});
  AddPlugin(kNic, {Healthy("n0")});
  Admit(PodWith("pod1", {Asking("a", kGpu, 2), Asking("b", kNic, 1)}));
  ASSERT_TRUE(gpus->PushDevices({Unhealthy("g0"), Healthy("g1"), Healthy("g2")}));

  PodStatus status = StatusOf({"a", "b", "sidecar-without-devices"});
  status.container_statuses[0].allocated_resources_status = {
      Statuses(kGpu, {{"stale", ResourceHealth::kUnknown}}),
      Statuses("example.com/dra-claim", {{"x", ResourceHealth::kHealthy}})};
  manager_->UpdateAllocatedResourcesStatus("pod1", status);

  EXPECT_EQ(
      status.container_statuses[0].allocated_resources_status,
      (std::vector<ResourceStatus>{
          Statuses(kGpu, {{"g0", ResourceHealth::kUnhealthy}, {"g1", ResourceHealth::kHealthy}}),
          Statuses("example.com/dra-claim", {{"x", ResourceHealth::kHealthy}})}));
  EXPECT_EQ(status.container_statuses[1].allocated_resources_status,
            std::vector<ResourceStatus>{Statuses(kNic, {{"n0", ResourceHealth::kHealthy}})});
  EXPECT_TRUE(status.container_statuses[2].allocated_resources_status.empty());

  // A held device the plugin no longer lists is reported Healthy, as upstream's default.
  ASSERT_TRUE(gpus->PushDevices({Healthy("g1"), Healthy("g2")}));
  status = StatusOf({"a"});
  manager_->UpdateAllocatedResourcesStatus("pod1", status);
  EXPECT_EQ(status.container_statuses[0].allocated_resources_status,
            std::vector<ResourceStatus>{Statuses(
                kGpu, {{"g0", ResourceHealth::kHealthy}, {"g1", ResourceHealth::kHealthy}})});

  // A pod the manager does not know: nothing changes.
  status = StatusOf({"a"});
  manager_->UpdateAllocatedResourcesStatus("pod-unknown", status);
  EXPECT_TRUE(status.container_statuses[0].allocated_resources_status.empty());
}

TEST(ResourceHealthNameTest, SpellsTheApiValues) {
  EXPECT_EQ(ResourceHealthName(ResourceHealth::kHealthy), "Healthy");
  EXPECT_EQ(ResourceHealthName(ResourceHealth::kUnhealthy), "Unhealthy");
  EXPECT_EQ(ResourceHealthName(ResourceHealth::kUnknown), "Unknown");
}

}  // namespace
}  // namespace devmgr::devicemanager
