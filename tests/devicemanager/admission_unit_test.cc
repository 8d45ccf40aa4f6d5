// Pod admission of ManagerImpl driven in memory through its seams: FakeEndpoints from a
// FakeEndpointFactory (no plugin sockets, no gRPC plugin) and a FakeCheckpointStore that fails
// on demand. Covers picking, refusals with upstream's texts, the plugin's preferred allocation,
// rollback after a failed plugin call or checkpoint write, init-container device reuse, and
// admissions running while a plugin thinks.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "checkpoint/checkpoint.h"
#include "devicemanager/manager_impl.h"
#include "tests/devicemanager/fake_checkpoint_store.h"
#include "tests/devicemanager/fake_endpoint.h"
#include "tests/testlib/fake_clock.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::devicemanager {
namespace {

using ::devmgr::testing::FakeCheckpointStore;
using ::devmgr::testing::FakeClock;
using ::devmgr::testing::FakeEndpoint;
using ::devmgr::testing::FakeEndpointFactory;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;

constexpr char kResource[] = "domain1.com/resource1";

Device Healthy(const std::string& id, std::vector<int64_t> numa_nodes = {}) {
  return Device{id, Health::kHealthy, std::move(numa_nodes)};
}

Pod OnePod(const std::string& uid, int64_t count) {
  return Pod{uid,
             "default",
             "pod-" + uid,
             {},
             {Container{"c", ContainerType::kRegular, {{kResource, count}}}}};
}

v1beta1::PreferredAllocationResponse Preferred(const std::vector<std::string>& ids) {
  v1beta1::PreferredAllocationResponse response;
  auto* container = response.add_container_responses();
  for (const auto& id : ids) container->add_deviceids(id);
  return response;
}

// A topology manager that admits NUMA node 0 for every container.
class NodeZeroAffinity final : public TopologyAffinityStore {
 public:
  std::optional<NumaMask> GetAffinity(absl::string_view, absl::string_view) const override {
    return NumaMask{0};
  }
};

class AdmissionUnitTest : public ::testing::Test {
 protected:
  void StartManager(const TopologyAffinityStore* affinity = nullptr,
                    bool dra_extended_resource = false) {
    ManagerOptions options;
    options.dra_extended_resource = dra_extended_resource;
    options.plugin_dir = dir_.path();
    options.clock = &clock_;
    options.checkpoint_write_delay = absl::Milliseconds(1);
    options.topology_affinity = affinity;
    options.checkpoint_store = &store_;
    options.endpoint_factory = &factory_;
    options.host_syncs_admissions = host_syncs_admissions_;
    options.numa_nodes = numa_nodes_;
    options.max_allowable_numa_nodes = max_allowable_numa_nodes_;
    manager_ = std::make_unique<ManagerImpl>(std::move(options));
    ASSERT_TRUE(manager_
                    ->Start(
                        [this] {
                          absl::MutexLock lock(&active_mu_);
                          return active_;
                        },
                        sources_ready_)
                    .ok());
  }

  void SetActive(std::vector<std::string> uids) {
    absl::MutexLock lock(&active_mu_);
    active_ = std::move(uids);
  }

  // Registers kResource in probe mode and pushes `devices` through the endpoint the factory
  // made. The fake dials nothing, but probe mode takes only an existing socket under a root:
  // kubelet.sock is one.
  std::shared_ptr<FakeEndpoint> AddPlugin(std::vector<Device> devices,
                                          bool preferred_allocation = false) {
    v1beta1::DevicePluginOptions options;
    options.set_get_preferred_allocation_available(preferred_allocation);
    factory_.set_plugin_options(options);
    EXPECT_TRUE(
        manager_->RegisterPlugin(kResource, manager_->KubeletSocket().string(), {"v1beta1"}).ok());
    std::shared_ptr<FakeEndpoint> endpoint = factory_.endpoint(kResource);
    EXPECT_NE(endpoint, nullptr);
    if (endpoint != nullptr) {
      EXPECT_TRUE(endpoint->PushDevices(std::move(devices)));
    }
    return endpoint;
  }

  absl::Status Admit(const Pod& pod) { return manager_->Allocate(pod, pod.containers[0]); }

  std::set<std::string> Held(const std::string& pod, const std::string& container = "c") {
    const ResourceDevices held = manager_->GetDevices(pod, container);
    std::set<std::string> ids;
    if (auto it = held.find(kResource); it != held.end()) {
      for (const auto& [id, device] : it->second) ids.insert(id);
    }
    return ids;
  }

  bool host_syncs_admissions_ = false;
  Manager::SourcesReadyFn sources_ready_ = [] { return true; };
  absl::Mutex active_mu_;
  std::vector<std::string> active_ ABSL_GUARDED_BY(active_mu_) = {"pod1", "pod2", "pod3"};
  std::vector<int> numa_nodes_;
  size_t max_allowable_numa_nodes_ = kMaxNumaNodesForHints;
  TempDir dir_;
  FakeClock clock_;
  FakeCheckpointStore store_;
  FakeEndpointFactory factory_;
  // Last: stopped (by its destructor) before the fakes it uses go.
  std::unique_ptr<ManagerImpl> manager_;
};

TEST_F(AdmissionUnitTest, AllocatePicksHealthyFreeDevices) {
  StartManager();
  auto endpoint = AddPlugin({Device{"d0", Health::kUnhealthy, {}}, Healthy("d1"), Healthy("d2")});
  std::vector<std::vector<std::string>> asked;
  absl::Mutex mu;
  endpoint->OnAllocate([&](const std::vector<std::string>& ids) {
    absl::MutexLock lock(&mu);
    asked.push_back(ids);
    v1beta1::AllocateResponse response;
    response.add_container_responses();
    return absl::StatusOr<v1beta1::AllocateResponse>(response);
  });
  ASSERT_TRUE(Admit(OnePod("pod1", 1)).ok());
  ASSERT_TRUE(Admit(OnePod("pod2", 1)).ok());
  EXPECT_EQ(Held("pod1"), (std::set<std::string>{"d1"}));
  EXPECT_EQ(Held("pod2"), (std::set<std::string>{"d2"}));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(asked, (std::vector<std::vector<std::string>>{{"d1"}, {"d2"}}));
}

TEST_F(AdmissionUnitTest, TooFewDevicesIsResourceExhausted) {
  StartManager();
  auto endpoint = AddPlugin({Healthy("d0"), Healthy("d1")});
  absl::Status status = Admit(OnePod("pod1", 3));
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "requested number of devices unavailable for domain1.com/resource1. Requested: 3, "
            "Available: 2");
  EXPECT_EQ(endpoint->allocate_calls(), 0);
  EXPECT_TRUE(Held("pod1").empty());
}

// A negative count, which the API server refuses in a pod spec, is refused: no plugin call, no
// device held, nothing written. Before, the plugin was asked to allocate no devices and an
// empty entry was written, whose run options then failed.
TEST_F(AdmissionUnitTest, ANegativeCountIsRefused) {
  StartManager();
  auto endpoint = AddPlugin({Healthy("d0"), Healthy("d1")});
  for (const int64_t count : {int64_t{-1}, std::numeric_limits<int64_t>::min()}) {
    absl::Status status = Admit(OnePod("pod1", count));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), absl::StrCat("container c requests ", count,
                                             " of domain1.com/resource1: a count must not be "
                                             "negative"));
    EXPECT_EQ(manager_->AdmitPod(OnePod("pod1", count)).code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(endpoint->allocate_calls(), 0);
  EXPECT_TRUE(manager_->GetDevices("pod1", "c").empty());
  const absl::StatusOr<std::string> bytes = store_.Read(checkpoint::kCheckpointFileName);
  if (bytes.ok()) {
    const absl::StatusOr<checkpoint::CheckpointData> data = checkpoint::Decode(*bytes);
    ASSERT_TRUE(data.ok()) << data.status();
    EXPECT_TRUE(data->pod_device_entries.empty());
  }
}

TEST_F(AdmissionUnitTest, PreferredAllocationIsHonouredAndSeesWhatWasPicked) {
  NodeZeroAffinity affinity;
  StartManager(&affinity);
  auto endpoint =
      AddPlugin({Healthy("d0", {0}), Healthy("d1", {1}), Healthy("d2", {1}), Healthy("d3", {1})},
                /*preferred_allocation=*/true);
  endpoint->OnGetPreferredAllocation(
      [](const std::vector<std::string>&, const std::vector<std::string>&, int) {
        return absl::StatusOr<v1beta1::PreferredAllocationResponse>(Preferred({"d0", "d2"}));
      });
  ASSERT_TRUE(Admit(OnePod("pod1", 2)).ok());
  EXPECT_EQ(Held("pod1"), (std::set<std::string>{"d0", "d2"}));
  // The aligned d0 was taken first: the plugin must include it, and chooses among every free
  // device for the whole request.
  auto requests = endpoint->preferred_requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].available, (std::vector<std::string>{"d0", "d1", "d2", "d3"}));
  EXPECT_EQ(requests[0].must_include, (std::vector<std::string>{"d0"}));
  EXPECT_EQ(requests[0].size, 2);
}

TEST_F(AdmissionUnitTest, PreferredAllocationFailureHoldsNothing) {
  StartManager();
  auto endpoint = AddPlugin({Healthy("d0"), Healthy("d1")}, /*preferred_allocation=*/true);
  endpoint->OnGetPreferredAllocation(
      [](const std::vector<std::string>&, const std::vector<std::string>&, int) {
        return absl::StatusOr<v1beta1::PreferredAllocationResponse>(
            absl::UnavailableError("plugin down"));
      });
  absl::Status status = Admit(OnePod("pod1", 2));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(),
            "device plugin GetPreferredAllocation rpc failed with err: plugin down");
  EXPECT_EQ(endpoint->allocate_calls(), 0);
  EXPECT_TRUE(Held("pod1").empty());

  endpoint->OnGetPreferredAllocation(nullptr);
  EXPECT_TRUE(Admit(OnePod("pod2", 2)).ok()) << "every device is free again";
}

TEST_F(AdmissionUnitTest, FailedAllocateLeavesNothingReserved) {
  StartManager();
  auto endpoint = AddPlugin({Healthy("d0"), Healthy("d1")});
  endpoint->OnAllocate([](const std::vector<std::string>&) {
    return absl::StatusOr<v1beta1::AllocateResponse>(absl::InternalError("boom"));
  });
  EXPECT_EQ(Admit(OnePod("pod1", 2)), absl::InternalError("boom"));
  EXPECT_TRUE(Held("pod1").empty());

  endpoint->OnAllocate(nullptr);
  ASSERT_TRUE(Admit(OnePod("pod2", 2)).ok());
  EXPECT_EQ(Held("pod2"), (std::set<std::string>{"d0", "d1"}));
}

TEST_F(AdmissionUnitTest, CheckpointWriteFailureRollsBack) {
  StartManager();
  auto endpoint = AddPlugin({Healthy("d0"), Healthy("d1")});
  store_.FailWrites(absl::InternalError("disk full"));
  const int writes_before = store_.writes();
  EXPECT_EQ(Admit(OnePod("pod1", 2)), absl::InternalError("disk full"));
  EXPECT_GT(store_.writes(), writes_before);
  EXPECT_TRUE(Held("pod1").empty());

  store_.FailWrites(absl::OkStatus());
  ASSERT_TRUE(Admit(OnePod("pod2", 2)).ok());
  EXPECT_EQ(Held("pod2"), (std::set<std::string>{"d0", "d1"}));
}

// A pod refused at its second container gives back its first container's devices; when the
// write of that fails too, it is tried again later, so that the file does not keep them until
// some other change is written (a restart would restore them).
TEST_F(AdmissionUnitTest, ARefusedPodWhoseRollbackWriteFailsIsWrittenLater) {
  StartManager();
  auto endpoint = AddPlugin({Healthy("d0"), Healthy("d1")});
  auto checkpoint = [&] { return store_.Read(checkpoint::kCheckpointFileName).value_or(""); };
  // The write that the devices' arrival schedules, first: only a write the rollback schedules
  // is left to come.
  ASSERT_TRUE(WaitFor([&] { return checkpoint().find("d1") != std::string::npos; }));
  std::atomic<int> calls = 0;
  std::atomic<bool> first_written = false;
  endpoint->OnAllocate([&](const std::vector<std::string>&) {
    if (calls++ == 0) {
      v1beta1::AllocateResponse response;
      response.add_container_responses();
      return absl::StatusOr<v1beta1::AllocateResponse>(response);
    }
    first_written = checkpoint().find("pod1") != std::string::npos;
    // The rollback's write fails; the one after it would not.
    store_.FailWrites(absl::InternalError("disk full"), 1);
    return absl::StatusOr<v1beta1::AllocateResponse>(absl::UnavailableError("plugin restarted"));
  });
  Pod pod = OnePod("pod1", 1);
  pod.containers.push_back(Container{"c2", ContainerType::kRegular, {{kResource, 1}}});
  const int writes_before = store_.writes();
  EXPECT_EQ(manager_->AdmitPod(pod).code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(Held("pod1").empty());
  EXPECT_TRUE(first_written.load()) << "the first container's write";
  EXPECT_GE(store_.writes(), writes_before + 2) << "the first container's, the rollback's";
  EXPECT_TRUE(WaitFor([&] { return checkpoint().find("pod1") == std::string::npos; }));
}

// A null SourcesReadyFn is always ready, as upstream's stub: the devices of a pod the host no
// longer lists are freed. Before, admission took it as ready and the cleanup as never ready,
// so those devices stayed held.
TEST_F(AdmissionUnitTest, ANullSourcesReadyFreesThePodsThatLeft) {
  sources_ready_ = nullptr;
  StartManager();
  auto endpoint = AddPlugin({Healthy("d0"), Healthy("d1")});
  ASSERT_TRUE(Admit(OnePod("pod1", 2)).ok());
  SetActive({"pod2"});
  manager_->UpdateAllocatedDevices();
  EXPECT_TRUE(Held("pod1").empty());
  ASSERT_TRUE(Admit(OnePod("pod2", 2)).ok());
  EXPECT_EQ(Held("pod2"), (std::set<std::string>{"d0", "d1"}));
}

// With host_syncs_admissions an admission is written only by the host's SyncCheckpoint, which
// it calls before it reports the admission done (devmgr serve, to write its pod record along).
TEST_F(AdmissionUnitTest, AHostSyncedAdmissionIsWrittenBySyncCheckpoint) {
  host_syncs_admissions_ = true;
  StartManager();
  auto endpoint = AddPlugin({Healthy("d0"), Healthy("d1")});
  auto checkpoint = [&] { return store_.Read(checkpoint::kCheckpointFileName).value_or(""); };
  // The write that the devices' arrival schedules, first.
  ASSERT_TRUE(WaitFor([&] { return checkpoint().find("d1") != std::string::npos; }));
  const int writes_before = store_.writes();
  ASSERT_TRUE(Admit(OnePod("pod1", 1)).ok());
  EXPECT_EQ(Held("pod1").size(), 1u);
  EXPECT_EQ(store_.writes(), writes_before) << "Allocate leaves the write to the host";
  EXPECT_EQ(checkpoint().find("pod1"), std::string::npos);
  ASSERT_TRUE(manager_->SyncCheckpoint().ok());
  EXPECT_EQ(store_.writes(), writes_before + 1);
  EXPECT_NE(checkpoint().find("pod1"), std::string::npos);
  store_.FailWrites(absl::InternalError("disk full"));
  EXPECT_EQ(manager_->SyncCheckpoint(), absl::InternalError("disk full"));
}

TEST_F(AdmissionUnitTest, InitContainerDevicesAreReused) {
  StartManager();
  auto endpoint = AddPlugin({Healthy("d0"), Healthy("d1"), Healthy("d2")});
  Pod pod{"pod1",
          "default",
          "pod-pod1",
          {Container{"init", ContainerType::kInit, {{kResource, 2}}}},
          {Container{"c", ContainerType::kRegular, {{kResource, 2}}}}};
  ASSERT_TRUE(manager_->AdmitPod(pod).ok());
  EXPECT_EQ(Held("pod1", "init").size(), 2u);
  EXPECT_EQ(Held("pod1", "c"), Held("pod1", "init"));
  EXPECT_EQ(Admit(OnePod("pod2", 2)).code(), absl::StatusCode::kResourceExhausted)
      << "one device left";
}

Pod InitAndAppPod(const std::string& uid) {
  return Pod{uid,
             "default",
             "pod-" + uid,
             {Container{"init", ContainerType::kInit, {{kResource, 1}}}},
             {Container{"c", ContainerType::kRegular, {{kResource, 1}}}}};
}

// Upstream's Allocate leaves the reusable devices alone when a write fails; here the container
// is rolled back, and the init container's device it reused must be reusable again: before,
// the retry was refused with "Available: 0" on a node with one device.
TEST_F(AdmissionUnitTest, AFailedWriteGivesBackTheInitContainerDevicesTheContainerReused) {
  StartManager();
  auto endpoint = AddPlugin({Healthy("d0")});
  const Pod pod = InitAndAppPod("pod1");
  ASSERT_TRUE(manager_->Allocate(pod, pod.init_containers[0]).ok());
  EXPECT_EQ(Held("pod1", "init"), (std::set<std::string>{"d0"}));

  store_.FailWrites(absl::InternalError("disk full"));
  EXPECT_EQ(manager_->Allocate(pod, pod.containers[0]), absl::InternalError("disk full"));
  EXPECT_TRUE(Held("pod1", "c").empty());
  store_.FailWrites(absl::OkStatus());
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  EXPECT_EQ(Held("pod1", "c"), (std::set<std::string>{"d0"}));
}

// An admission that took an init container's device for reuse and then failed at the plugin
// gives it back for reuse only if the pod's init container still holds it. Here the pod was
// released while the plugin was asked, and another pod took the device: before, the failed
// admission made it reusable by the released pod again, and admitting that pod's container
// again handed out the device the other pod held.
TEST_F(AdmissionUnitTest, AFailedAdmissionDoesNotLendADeviceItsPodNoLongerHolds) {
  StartManager();
  auto endpoint = AddPlugin({Healthy("d0")});
  absl::Notification release;
  std::atomic<int> calls = 0;
  endpoint->OnAllocate([&](const std::vector<std::string>&) {
    if (calls++ == 1) {
      release.WaitForNotification();
      return absl::StatusOr<v1beta1::AllocateResponse>(absl::UnavailableError("plugin restarted"));
    }
    v1beta1::AllocateResponse response;
    response.add_container_responses();
    return absl::StatusOr<v1beta1::AllocateResponse>(response);
  });
  const Pod pod = InitAndAppPod("pod1");
  ASSERT_TRUE(manager_->Allocate(pod, pod.init_containers[0]).ok());
  absl::Status app;
  std::thread admission([&] { app = manager_->Allocate(pod, pod.containers[0]); });
  ASSERT_TRUE(WaitFor([&] { return calls.load() == 2; }));
  ASSERT_TRUE(manager_->ReleasePod("pod1").ok());
  ASSERT_TRUE(Admit(OnePod("pod2", 1)).ok());
  EXPECT_EQ(Held("pod2"), (std::set<std::string>{"d0"}));
  release.Notify();
  admission.join();
  EXPECT_EQ(app.code(), absl::StatusCode::kUnavailable) << app;

  const absl::Status again = manager_->Allocate(pod, pod.containers[0]);
  EXPECT_EQ(again.code(), absl::StatusCode::kResourceExhausted) << again;
  EXPECT_TRUE(Held("pod1").empty());
  EXPECT_EQ(Held("pod2"), (std::set<std::string>{"d0"}));
}

// After a restart the init container holds its device from the checkpoint: admitting it again
// allocates nothing but makes that device reusable, as upstream's Allocate does, so the app
// container gets it. Before, the app container was refused on a node with one device.
TEST_F(AdmissionUnitTest, AnInitContainerRestoredFromTheCheckpointLendsItsDevicesAgain) {
  StartManager();
  AddPlugin({Healthy("d0")});
  const Pod pod = InitAndAppPod("pod1");
  ASSERT_TRUE(manager_->Allocate(pod, pod.init_containers[0]).ok());
  manager_->Stop();
  StartManager();
  AddPlugin({Healthy("d0")});
  ASSERT_EQ(Held("pod1", "init"), (std::set<std::string>{"d0"})) << "restored";
  ASSERT_TRUE(manager_->Allocate(pod, pod.init_containers[0]).ok());
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  EXPECT_EQ(Held("pod1", "c"), (std::set<std::string>{"d0"}));
  // The app container keeps it: a second pod finds nothing free.
  EXPECT_EQ(Admit(OnePod("pod2", 1)).code(), absl::StatusCode::kResourceExhausted);
}

// An init container admitted again (it holds its device already) never makes reusable a device
// an app container of the pod has taken since: the pod's next app container gets a device of
// its own. Before, the init container's device was made reusable again and two app containers
// shared it.
TEST_F(AdmissionUnitTest, AnInitContainerAdmittedAgainNeverLendsADeviceAnAppContainerHolds) {
  StartManager();
  AddPlugin({Healthy("d0"), Healthy("d1")});
  Pod pod{"pod1",
          "default",
          "pod-pod1",
          {Container{"init", ContainerType::kInit, {{kResource, 1}}}},
          {Container{"c", ContainerType::kRegular, {{kResource, 1}}},
           Container{"c2", ContainerType::kRegular, {{kResource, 1}}}}};
  ASSERT_TRUE(manager_->Allocate(pod, pod.init_containers[0]).ok());
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  EXPECT_EQ(Held("pod1", "c"), Held("pod1", "init"));
  ASSERT_TRUE(manager_->Allocate(pod, pod.init_containers[0]).ok());
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[1]).ok());
  EXPECT_EQ(Held("pod1", "c"), (std::set<std::string>{"d0"}));
  EXPECT_EQ(Held("pod1", "c2"), (std::set<std::string>{"d1"}));
}

// A host on a machine with more NUMA nodes than 8 lists them and raises the limit, as a
// kubelet's max-allowable-numa-nodes does: hints are generated over all of them. Without it the
// resource has no preference (the default limit, upstream's 8).
TEST_F(AdmissionUnitTest, AHostRaisesTheNumaNodeLimitForItsOwnNodes) {
  for (int node = 0; node < 10; ++node) numa_nodes_.push_back(node);
  max_allowable_numa_nodes_ = 10;
  StartManager();
  AddPlugin({Healthy("d0", {0}), Healthy("d9", {9})});
  const Pod pod = OnePod("pod1", 1);
  TopologyHints hints = manager_->GetTopologyHints(pod, pod.containers[0]);
  ASSERT_TRUE(hints[kResource].has_value());
  // Every subset of the 10 nodes that holds node 0 or node 9: 1023 - 255.
  EXPECT_EQ(hints[kResource]->size(), 768u);
  EXPECT_TRUE(std::count_if(hints[kResource]->begin(), hints[kResource]->end(),
                            [](const TopologyHint& hint) {
                              return hint.preferred && hint.numa_affinity == NumaMask{9};
                            }) == 1);

  manager_.reset();
  max_allowable_numa_nodes_ = kMaxNumaNodesForHints;
  StartManager();
  AddPlugin({Healthy("d0", {0}), Healthy("d9", {9})});
  hints = manager_->GetTopologyHints(pod, pod.containers[0]);
  EXPECT_FALSE(hints[kResource].has_value()) << "10 nodes past the default limit of 8";

  // The raised limit is for the host's list: nodes the devices report keep the default.
  manager_.reset();
  numa_nodes_.clear();
  max_allowable_numa_nodes_ = 10;
  StartManager();
  std::vector<Device> on_ten_nodes;
  for (int node = 0; node < 10; ++node) {
    on_ten_nodes.push_back(Healthy("d" + std::to_string(node), {node}));
  }
  AddPlugin(on_ten_nodes);
  hints = manager_->GetTopologyHints(pod, pod.containers[0]);
  EXPECT_FALSE(hints[kResource].has_value()) << "10 reported nodes past the default of 8";
  manager_.reset();

  // Upstream's minimum.
  ManagerOptions low;
  low.plugin_dir = dir_.Sub("low");
  low.max_allowable_numa_nodes = 4;
  ManagerImpl refused(std::move(low));
  const absl::Status started = refused.Start([] { return std::vector<std::string>(); }, nullptr);
  EXPECT_EQ(started.code(), absl::StatusCode::kInvalidArgument) << started;
  EXPECT_EQ(started.message(),
            "max_allowable_numa_nodes is 4, below upstream's minimum of max-allowable-numa-nodes, "
            "8");
}

// The machine's nodes are the bits of a hint's mask: one outside 0..63, or one given twice,
// made every hint come out more than once. Start refuses them.
TEST_F(AdmissionUnitTest, NumaNodesAMaskCannotHoldOnceAreRefused) {
  for (const auto& [nodes, error] : std::vector<std::pair<std::vector<int>, std::string>>{
           {{0, 1, 64}, "numa_nodes: node 64 is outside 0-63"},
           {{-1, 0, 1}, "numa_nodes: node -1 is outside 0-63"},
           {{0, 0, 1, 1}, "numa_nodes: node 0 is given twice"}}) {
    ManagerOptions options;
    options.plugin_dir = dir_.path();
    options.checkpoint_store = &store_;
    options.endpoint_factory = &factory_;
    options.numa_nodes = nodes;
    ManagerImpl manager(std::move(options));
    const absl::Status started = manager.Start(nullptr, nullptr);
    EXPECT_EQ(started.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(started.message(), error);
  }
}

TEST_F(AdmissionUnitTest, SecondAdmissionOfAContainerInFlightIsAborted) {
  StartManager();
  auto endpoint = AddPlugin({Healthy("d0"), Healthy("d1")}, /*preferred_allocation=*/true);
  // Only the first call blocks, so that a second admission let through fails the test rather
  // than hang it.
  absl::Notification release;
  std::atomic<int> calls{0};
  endpoint->OnGetPreferredAllocation(
      [&](const std::vector<std::string>&, const std::vector<std::string>&, int) {
        if (calls++ == 0) release.WaitForNotification();
        return absl::StatusOr<v1beta1::PreferredAllocationResponse>(Preferred({"d1"}));
      });
  const Pod pod = OnePod("pod1", 1);
  absl::Status first;
  std::thread admission([&] { first = Admit(pod); });
  ASSERT_TRUE(WaitFor([&] { return endpoint->preferred_calls() == 1; }));
  absl::Status second = Admit(pod);
  release.Notify();
  admission.join();
  EXPECT_EQ(second.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(second.message(),
            "allocation of domain1.com/resource1 to pod pod1 container c is already in progress");
  EXPECT_TRUE(first.ok()) << first;
  EXPECT_EQ(Held("pod1"), (std::set<std::string>{"d1"}));
}

// A pod released while its admission waits for the plugin's Allocate: the release stands. The
// admission commits nothing and is Aborted, and the device is free for the next pod. Before, the
// admission committed after the release, and the released pod held the device.
TEST_F(AdmissionUnitTest, APodReleasedWhileItIsAdmittedHoldsNothing) {
  StartManager();
  auto endpoint = AddPlugin({Healthy("d0")});
  // The first Allocate of each round waits for `resume`.
  std::atomic<int> calls{0};
  std::atomic<absl::Notification*> resume{nullptr};
  endpoint->OnAllocate([&](const std::vector<std::string>&) {
    if (calls++ == 0) resume.load()->WaitForNotification();
    v1beta1::AllocateResponse response;
    response.add_container_responses();
    return absl::StatusOr<v1beta1::AllocateResponse>(response);
  });
  for (const bool whole_pod : {false, true}) {
    absl::Notification resume_round;
    resume = &resume_round;
    calls = 0;
    const Pod pod = OnePod("pod1", 1);
    absl::Status admitted;
    std::thread admission([&] { admitted = whole_pod ? manager_->AdmitPod(pod) : Admit(pod); });
    const bool waiting = WaitFor([&] { return calls.load() == 1; });
    const absl::Status released = manager_->ReleasePod("pod1");
    resume_round.Notify();
    admission.join();
    ASSERT_TRUE(waiting);
    EXPECT_TRUE(released.ok()) << released;
    EXPECT_EQ(admitted.code(), absl::StatusCode::kAborted) << admitted;
    EXPECT_EQ(admitted.message(), "pod pod1 was released while it was admitted");
    EXPECT_TRUE(Held("pod1").empty());
    ASSERT_TRUE(Admit(OnePod("pod2", 1)).ok()) << "the device is free";
    EXPECT_EQ(Held("pod2"), (std::set<std::string>{"d0"}));
    ASSERT_TRUE(manager_->ReleasePod("pod2").ok());
    // The mark went with the admission: the pod may be admitted again.
    ASSERT_TRUE(Admit(pod).ok());
    ASSERT_TRUE(manager_->ReleasePod("pod1").ok());
  }
}

// Only the admissions that began before a release are refused for it: one of another container
// of the pod that begins after the release, while the first is still in flight, is admitted.
TEST_F(AdmissionUnitTest, AnAdmissionBegunAfterAReleaseIsNotRefusedForIt) {
  StartManager();
  auto endpoint = AddPlugin({Healthy("d0"), Healthy("d1")});
  absl::Notification resume;
  std::atomic<int> calls{0};
  endpoint->OnAllocate([&](const std::vector<std::string>&) {
    if (calls++ == 0) resume.WaitForNotification();
    v1beta1::AllocateResponse response;
    response.add_container_responses();
    return absl::StatusOr<v1beta1::AllocateResponse>(response);
  });
  Pod pod = OnePod("pod1", 1);
  pod.containers.push_back(Container{"d", ContainerType::kRegular, {{kResource, 1}}});
  absl::Status first;
  std::thread admission([&] { first = manager_->Allocate(pod, pod.containers[0]); });
  const bool waiting = WaitFor([&] { return calls.load() == 1; });
  const absl::Status released = manager_->ReleasePod("pod1");
  const absl::Status later = manager_->Allocate(pod, pod.containers[1]);
  resume.Notify();
  admission.join();
  ASSERT_TRUE(waiting);
  EXPECT_TRUE(released.ok()) << released;
  EXPECT_TRUE(later.ok()) << later;
  EXPECT_EQ(first.code(), absl::StatusCode::kAborted) << first;
  EXPECT_TRUE(Held("pod1", "c").empty());
  EXPECT_EQ(Held("pod1", "d").size(), 1u);
}

TEST_F(AdmissionUnitTest, ConcurrentAdmissionsNeverShareADevice) {
  NodeZeroAffinity affinity;
  StartManager(&affinity);
  auto endpoint = AddPlugin({Healthy("d0", {0}), Healthy("d1", {1}), Healthy("d2", {1}),
                             Healthy("d3", {1}), Healthy("d4", {1})},
                            /*preferred_allocation=*/true);
  // pod1 (2 devices) reserves the aligned d0, then its plugin call blocks; pod2 (3 devices) is
  // admitted meanwhile. Both are offered devices pod2 takes first.
  absl::Notification release;
  endpoint->OnGetPreferredAllocation(
      [&](const std::vector<std::string>&, const std::vector<std::string>&, int size) {
        if (size == 2) {
          release.WaitForNotification();
          return absl::StatusOr<v1beta1::PreferredAllocationResponse>(Preferred({"d0", "d1"}));
        }
        return absl::StatusOr<v1beta1::PreferredAllocationResponse>(Preferred({"d1", "d2", "d3"}));
      });
  absl::Status first;
  std::thread admission([&] { first = Admit(OnePod("pod1", 2)); });
  ASSERT_TRUE(WaitFor([&] { return endpoint->preferred_calls() == 1; }));
  ASSERT_TRUE(Admit(OnePod("pod2", 3)).ok());
  release.Notify();
  admission.join();
  ASSERT_TRUE(first.ok()) << first;

  EXPECT_EQ(Held("pod2"), (std::set<std::string>{"d1", "d2", "d3"}));
  EXPECT_EQ(Held("pod1"), (std::set<std::string>{"d0", "d4"}));
  auto requests = endpoint->preferred_requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].available, (std::vector<std::string>{"d1", "d2", "d3", "d4"}))
      << "d0 was reserved while pod1's plugin call ran";
}

// With more aligned devices than it needs, a pod's plugin chooses among the aligned ones alone;
// should admissions beside it take them all while the plugin chooses, the pod gets the free
// unaligned devices, as when too few were aligned, rather than a refusal.
TEST_F(AdmissionUnitTest, AlignedDevicesTakenWhileThePluginChoseLeaveTheUnalignedOnes) {
  NodeZeroAffinity affinity;
  StartManager(&affinity);
  auto endpoint = AddPlugin({Healthy("d0", {0}), Healthy("d1", {0}), Healthy("d2", {1}),
                             Healthy("d3", {1}), Healthy("d4")},
                            /*preferred_allocation=*/true);
  absl::Notification release;
  endpoint->OnGetPreferredAllocation(
      [&](const std::vector<std::string>&, const std::vector<std::string>&, int) {
        release.WaitForNotification();
        return absl::StatusOr<v1beta1::PreferredAllocationResponse>(Preferred({"d0"}));
      });
  absl::Status first;
  std::thread admission([&] { first = Admit(OnePod("pod1", 1)); });
  ASSERT_TRUE(WaitFor([&] { return endpoint->preferred_calls() == 1; }));
  // pod2 needs both aligned devices: it takes them without asking the plugin.
  ASSERT_TRUE(Admit(OnePod("pod2", 2)).ok());
  release.Notify();
  admission.join();
  ASSERT_TRUE(first.ok()) << first;

  EXPECT_EQ(Held("pod2"), (std::set<std::string>{"d0", "d1"}));
  EXPECT_EQ(Held("pod1"), (std::set<std::string>{"d2"})) << "unaligned before no topology";
  auto requests = endpoint->preferred_requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].available, (std::vector<std::string>{"d0", "d1"}))
      << "pod1 was offered the aligned devices alone";
}

// Should admissions beside a pod take every free device while its plugin chooses, the pod is
// refused as a pod that finds too few at its start is (ResourceExhausted, upstream's text), not
// with an internal error ("unexpectedly allocated less resources than required").
TEST_F(AdmissionUnitTest, DevicesTakenWhileThePluginChoseLeaveTooFewAndThePodIsRefused) {
  StartManager();
  auto endpoint = AddPlugin({Healthy("d0"), Healthy("d1"), Healthy("d2")},
                            /*preferred_allocation=*/true);
  absl::Notification release;
  std::atomic<int> calls{0};
  endpoint->OnGetPreferredAllocation(
      [&](const std::vector<std::string>&, const std::vector<std::string>&, int) {
        if (calls++ == 0) release.WaitForNotification();
        return absl::StatusOr<v1beta1::PreferredAllocationResponse>(Preferred({"d0", "d1"}));
      });
  absl::Status first;
  std::thread admission([&] { first = Admit(OnePod("pod1", 2)); });
  const bool asked = WaitFor([&] { return endpoint->preferred_calls() == 1; });
  // pod2 takes every device while pod1's plugin chooses.
  const absl::Status second = Admit(OnePod("pod2", 3));
  release.Notify();
  admission.join();
  ASSERT_TRUE(asked);
  ASSERT_TRUE(second.ok()) << second;
  EXPECT_EQ(first.code(), absl::StatusCode::kResourceExhausted) << first;
  EXPECT_EQ(first.message(),
            "requested number of devices unavailable for domain1.com/resource1. Requested: 2, "
            "Available: 0");
  EXPECT_TRUE(Held("pod1").empty());
  EXPECT_EQ(endpoint->allocate_calls(), 1) << "pod2's alone";
}

// Upstream's TestAdmitPodWithDRAResources: a container resource the pod's status maps to DRA
// (extendedResourceClaimStatus.requestMappings) is left to the DRA manager when the gate
// DRAExtendedResource is on, and allocated as any other (here: refused, none is healthy) when
// it is off.
TEST_F(AdmissionUnitTest, TestAdmitPodWithDRAResources) {
  for (const bool gate : {true, false}) {
    SCOPED_TRACE(gate ? "DRAExtendedResource enabled" : "DRAExtendedResource disabled");
    manager_.reset();
    StartManager(nullptr, gate);
    AddPlugin({});
    Pod pod = OnePod("pod1", 1);
    pod.dra_resource_mappings.push_back({"c", kResource});
    ASSERT_TRUE(IsDraExtendedResource(pod, "c", kResource));
    const absl::Status allocated = manager_->Allocate(pod, pod.containers[0]);
    if (gate) {
      EXPECT_TRUE(allocated.ok()) << allocated;
      EXPECT_TRUE(Held("pod1").empty());
      EXPECT_TRUE(manager_->GetTopologyHints(pod, pod.containers[0]).empty());
      EXPECT_TRUE(manager_->AdmitPod(pod).ok());
    } else {
      EXPECT_FALSE(allocated.ok());
    }
  }
}

}  // namespace
}  // namespace devmgr::devicemanager
