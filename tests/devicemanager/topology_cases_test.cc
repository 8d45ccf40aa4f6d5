// Upstream's NUMA topology scenarios of the device manager (topology_hints_test.go) that the
// other suites leave out, run in memory against ManagerImpl: FakeEndpoints from a
// FakeEndpointFactory stand in for plugins, a FakeCheckpointStore for the checkpoint, and a
// table of per-container affinities for the host's topology manager.
//
// - TestGetTopologyHints / TestGetPodTopologyHints: upstream's shared hint scenarios at container
//   and pod scope, and the pod-scope ones (init containers, sidecars, a neighbour pod's devices).
// - TestTopologyAlignedAllocation: which NUMA nodes an allocation lands on for an admitted
//   affinity, with and without the plugin's preferred allocation.
// - TestGetPreferredAllocationParameters: what the plugin is offered (available, must include,
//   size) when the pod reuses its init container's devices.
//
// Upstream sets the manager's maps directly; here devices "already allocated" are allocated
// through Allocate, the plugin's preferred allocation naming exactly the devices the scenario
// wants held. Each scenario runs on a fresh manager and keeps upstream's description as its
// trace, so a failure names the upstream case.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "devicemanager/device_snapshot.h"
#include "devicemanager/manager_impl.h"
#include "devicemanager/topology_hints.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "tests/devicemanager/fake_checkpoint_store.h"
#include "tests/devicemanager/fake_endpoint.h"
#include "tests/testlib/fake_clock.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::devicemanager {
namespace {

using ::devmgr::testing::FakeCheckpointStore;
using ::devmgr::testing::FakeClock;
using ::devmgr::testing::FakeEndpoint;
using ::devmgr::testing::FakeEndpointFactory;
using ::devmgr::testing::TempDir;

// Upstream's resource names.
constexpr char kTestDevice[] = "testdevice";
constexpr char kTestDevice1[] = "testdevice1";
constexpr char kTestDevice2[] = "testdevice2";
constexpr char kNotRegistered[] = "notRegistered";
constexpr char kResource[] = "resource";

// A device on one NUMA node (upstream's makeNUMADevice).
Device OnNode(const std::string& id, int64_t node) { return Device{id, Health::kHealthy, {node}}; }
// A device whose plugin reports no topology at all.
Device NoTopology(const std::string& id) { return Device{id, Health::kHealthy, {}}; }

// Devices whose plugin sends a TopologyInfo that lists no NUMA node, read from the wire as the
// manager reads a ListAndWatch snapshot.
std::vector<Device> WithEmptyTopology(const std::vector<std::string>& ids) {
  v1beta1::ListAndWatchResponse response;
  for (const std::string& id : ids) {
    v1beta1::Device* device = response.add_devices();
    device->set_id(id);
    device->set_health("Healthy");
    device->mutable_topology();
  }
  absl::StatusOr<std::vector<Device>> devices = DevicesFromWire(response.SerializeAsString());
  EXPECT_TRUE(devices.ok()) << devices.status();
  return devices.value_or(std::vector<Device>());
}

// `count` devices "Dev<first>" .. on `node`.
std::vector<Device> Range(int first, int count, int64_t node) {
  std::vector<Device> devices;
  for (int i = first; i < first + count; ++i) {
    devices.push_back(OnNode(absl::StrCat("Dev", i), node));
  }
  return devices;
}

std::vector<Device> Concat(std::vector<Device> a, const std::vector<Device>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Container App(const std::string& name, std::map<std::string, int64_t> devices) {
  return Container{name, ContainerType::kRegular, std::move(devices)};
}
Container Init(const std::string& name, std::map<std::string, int64_t> devices) {
  return Container{name, ContainerType::kInit, std::move(devices)};
}
Container Sidecar(const std::string& name, std::map<std::string, int64_t> devices) {
  return Container{name, ContainerType::kSidecar, std::move(devices)};
}

Pod MakePod(const std::string& uid, std::vector<Container> containers,
            std::vector<Container> init_containers = {}) {
  return Pod{uid, "default", "pod-" + uid, std::move(init_containers), std::move(containers)};
}

using Hints = std::optional<std::vector<TopologyHint>>;

// Upstream's nil hint list: the resource has no NUMA preference.
const Hints kNoPreference = std::nullopt;
// Upstream's empty hint list: the request cannot be satisfied.
const Hints kUnsatisfiable = std::vector<TopologyHint>();

// Hints in a fixed order and as text, so that lists that differ only in order compare equal
// (upstream sorts both sides) and a failure prints readably.
std::string Render(const Hints& hints) {
  if (!hints.has_value()) return "nil (no preference)";
  std::vector<TopologyHint> sorted = *hints;
  std::sort(sorted.begin(), sorted.end(), [](const TopologyHint& a, const TopologyHint& b) {
    return std::tuple(a.numa_affinity.Count(), a.numa_affinity.bits(), a.preferred) <
           std::tuple(b.numa_affinity.Count(), b.numa_affinity.bits(), b.preferred);
  });
  std::vector<std::string> parts;
  for (const TopologyHint& hint : sorted) {
    parts.push_back(absl::StrCat("{", absl::StrJoin(hint.numa_affinity.Nodes(), ","), "}",
                                 hint.preferred ? " preferred" : ""));
  }
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

// The host topology manager's admitted affinity, per container; none for the others.
class AffinityTable final : public TopologyAffinityStore {
 public:
  void Set(const std::string& pod_uid, const std::string& container, NumaMask mask) {
    absl::MutexLock lock(&mu_);
    masks_[{pod_uid, container}] = mask;
  }
  std::optional<NumaMask> GetAffinity(absl::string_view pod_uid,
                                      absl::string_view container) const override {
    absl::MutexLock lock(&mu_);
    auto it = masks_.find({std::string(pod_uid), std::string(container)});
    if (it == masks_.end()) return std::nullopt;
    return it->second;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, NumaMask> masks_ ABSL_GUARDED_BY(mu_);
};

v1beta1::PreferredAllocationResponse Preferred(const std::vector<std::string>& ids) {
  v1beta1::PreferredAllocationResponse response;
  auto* container = response.add_container_responses();
  for (const auto& id : ids) container->add_deviceids(id);
  return response;
}

class TopologyCasesTest : public ::testing::Test {
 protected:
  // A fresh manager (the previous one, if any, is stopped first) on the machine's NUMA nodes
  // `numa_nodes`, as upstream's tests set m.numaNodes, with `active` as the host's active pods.
  void StartManager(std::vector<int> numa_nodes, std::vector<std::string> active) {
    manager_.reset();
    factory_ = std::make_unique<FakeEndpointFactory>();
    {
      absl::MutexLock lock(&active_mu_);
      active_ = std::move(active);
    }
    affinity_ = std::make_unique<AffinityTable>();
    // A new store: the next manager must not restore what the last one allocated.
    store_ = std::make_unique<FakeCheckpointStore>();
    ManagerOptions options;
    options.plugin_dir = dir_.path();
    options.clock = &clock_;
    options.checkpoint_write_delay = absl::Milliseconds(1);
    options.checkpoint_store = store_.get();
    options.endpoint_factory = factory_.get();
    options.topology_affinity = affinity_.get();
    options.numa_nodes = std::move(numa_nodes);
    manager_ = std::make_unique<ManagerImpl>(std::move(options));
    ASSERT_TRUE(manager_
                    ->Start(
                        [this] {
                          absl::MutexLock lock(&active_mu_);
                          return active_;
                        },
                        [] { return true; })
                    .ok());
  }

  // Registers `resource` (in probe mode, on kubelet.sock: the fake dials nothing) and sends
  // `devices` as its first snapshot. With `preferred_allocation` the plugin offers
  // GetPreferredAllocation.
  std::shared_ptr<FakeEndpoint> AddResource(const std::string& resource,
                                            std::vector<Device> devices,
                                            bool preferred_allocation = true) {
    v1beta1::DevicePluginOptions options;
    options.set_get_preferred_allocation_available(preferred_allocation);
    factory_->set_plugin_options(options);
    EXPECT_TRUE(
        manager_->RegisterPlugin(resource, manager_->KubeletSocket().string(), {"v1beta1"}).ok());
    std::shared_ptr<FakeEndpoint> endpoint = factory_->endpoint(resource);
    EXPECT_NE(endpoint, nullptr) << resource;
    if (endpoint != nullptr) {
      EXPECT_TRUE(endpoint->PushDevices(std::move(devices)));
    }
    return endpoint;
  }

  std::set<std::string> Held(const std::string& pod, const std::string& container,
                             const std::string& resource) {
    const ResourceDevices held = manager_->GetDevices(pod, container);
    std::set<std::string> ids;
    if (auto it = held.find(resource); it != held.end()) {
      for (const auto& [id, device] : it->second) ids.insert(id);
    }
    return ids;
  }

  // Allocates `container` of `pod` exactly the devices `ids` names per resource: each
  // resource's plugin prefers them (the container's counts must match).
  void Pin(const Pod& pod, const Container& container,
           const std::map<std::string, std::vector<std::string>>& ids) {
    for (const auto& [resource, wanted] : ids) {
      std::shared_ptr<FakeEndpoint> endpoint = factory_->endpoint(resource);
      ASSERT_NE(endpoint, nullptr) << resource;
      endpoint->OnGetPreferredAllocation(
          [wanted = wanted](const std::vector<std::string>&, const std::vector<std::string>&, int) {
            return absl::StatusOr<v1beta1::PreferredAllocationResponse>(Preferred(wanted));
          });
    }
    const absl::Status allocated = manager_->Allocate(pod, container);
    for (const auto& entry : ids) {
      factory_->endpoint(entry.first)->OnGetPreferredAllocation(nullptr);
    }
    ASSERT_TRUE(allocated.ok()) << allocated;
    for (const auto& [resource, wanted] : ids) {
      ASSERT_EQ(Held(pod.uid, container.name, resource),
                std::set<std::string>(wanted.begin(), wanted.end()))
          << "setup: " << pod.uid << "/" << container.name << " " << resource;
    }
  }

  // Pin for a container that only holds devices: a pod of its own with that one container.
  void PinTo(const std::string& pod_uid, const std::string& container_name,
             const std::map<std::string, std::vector<std::string>>& ids) {
    std::map<std::string, int64_t> counts;
    for (const auto& [resource, wanted] : ids) {
      counts[resource] = static_cast<int64_t>(wanted.size());
    }
    const Pod pod = MakePod(pod_uid, {App(container_name, counts)});
    Pin(pod, pod.containers[0], ids);
  }

  TempDir dir_;
  FakeClock clock_;
  std::unique_ptr<FakeCheckpointStore> store_;
  absl::Mutex active_mu_;
  std::vector<std::string> active_ ABSL_GUARDED_BY(active_mu_);
  std::unique_ptr<FakeEndpointFactory> factory_;
  std::unique_ptr<AffinityTable> affinity_;
  // Last: stopped (by its destructor) before the fakes it uses go.
  std::unique_ptr<ManagerImpl> manager_;
};

// ---- TestGetTopologyHints and TestGetPodTopologyHints ----

// Devices some container already holds when the hints are asked for (upstream's
// allocatedDevices).
struct Holding {
  std::string pod_uid;
  std::string container;
  std::map<std::string, std::vector<std::string>> ids = {};
};

struct HintsCase {
  std::string description;
  Pod pod;
  std::map<std::string, std::vector<Device>> devices = {};
  std::vector<Holding> allocated = {};
  std::map<std::string, Hints> expected = {};
  // Already ported at container scope by admission_test.cc's TestGetTopologyHints.
  bool covered_at_container_scope = false;
};

// Upstream's getCommonTestCases: every pod is "fakePod" whose first container asks.
std::vector<HintsCase> CommonCases() {
  const auto one = [](const std::string& resource, int64_t count) {
    return MakePod("fakePod", {App("fakeContainer", {{resource, count}})});
  };
  const std::vector<Device> two_per_socket = {OnNode("Dev1", 0), OnNode("Dev2", 1),
                                              OnNode("Dev3", 0), OnNode("Dev4", 1)};
  const std::vector<Device> two_per_socket_in_order = {OnNode("Dev1", 0), OnNode("Dev2", 0),
                                                       OnNode("Dev3", 1), OnNode("Dev4", 1)};
  const std::vector<TopologyHint> either_socket = {
      {NumaMask{0}, true}, {NumaMask{1}, true}, {NumaMask{0, 1}, false}};
  return {
      {
          // The devices report a TopologyInfo without NUMA nodes, as upstream's newer form.
          .description = "Single Request, no alignment",
          .pod = one(kTestDevice, 1),
          .devices = {{kTestDevice, WithEmptyTopology({"Dev1", "Dev2"})}},
          .expected = {{kTestDevice, kNoPreference}},
      },
      {
          .description = "Single Request, only one with alignment",
          .pod = one(kTestDevice, 1),
          .devices = {{kTestDevice, {NoTopology("Dev1"), OnNode("Dev2", 1)}}},
          .expected = {{kTestDevice,
                        std::vector<TopologyHint>{{NumaMask{1}, true}, {NumaMask{0, 1}, false}}}},
      },
      {
          .description = "Single Request, one device per socket",
          .pod = one(kTestDevice, 1),
          .devices = {{kTestDevice, {OnNode("Dev1", 0), OnNode("Dev2", 1)}}},
          .expected = {{kTestDevice, either_socket}},
          .covered_at_container_scope = true,
      },
      {
          .description = "Request for 2, one device per socket",
          .pod = one(kTestDevice, 2),
          .devices = {{kTestDevice, {OnNode("Dev1", 0), OnNode("Dev2", 1)}}},
          .expected = {{kTestDevice, std::vector<TopologyHint>{{NumaMask{0, 1}, true}}}},
          .covered_at_container_scope = true,
      },
      {
          .description = "Request for 2, 2 devices per socket",
          .pod = one(kTestDevice, 2),
          .devices = {{kTestDevice, two_per_socket}},
          .expected = {{kTestDevice, either_socket}},
      },
      {
          .description = "Request for 2, optimal on 1 NUMA node, forced cross-NUMA",
          .pod = one(kTestDevice, 2),
          .devices = {{kTestDevice, two_per_socket}},
          .allocated = {{"fakePod", "fakeOtherContainer", {{kTestDevice, {"Dev1", "Dev2"}}}}},
          .expected = {{kTestDevice, std::vector<TopologyHint>{{NumaMask{0, 1}, false}}}},
      },
      {
          .description = "2 device types, mixed configuration",
          .pod = MakePod("fakePod", {App("fakeContainer", {{kTestDevice1, 2}, {kTestDevice2, 1}})}),
          .devices = {{kTestDevice1, two_per_socket}, {kTestDevice2, {OnNode("Dev1", 0)}}},
          .expected = {{kTestDevice1, either_socket},
                       {kTestDevice2,
                        std::vector<TopologyHint>{{NumaMask{0}, true}, {NumaMask{0, 1}, false}}}},
      },
      {
          .description = "Single device type, more requested than available",
          .pod = one(kTestDevice, 6),
          .devices = {{kTestDevice, two_per_socket_in_order}},
          .expected = {{kTestDevice, kUnsatisfiable}},
      },
      {
          .description = "Single device type, all already allocated to container",
          .pod = one(kTestDevice, 2),
          .devices = {{kTestDevice, {OnNode("Dev1", 0), OnNode("Dev2", 0)}}},
          .allocated = {{"fakePod", "fakeContainer", {{kTestDevice, {"Dev1", "Dev2"}}}}},
          .expected = {{kTestDevice,
                        std::vector<TopologyHint>{{NumaMask{0}, true}, {NumaMask{0, 1}, false}}}},
      },
      {
          .description = "Single device type, less already allocated to container than requested",
          .pod = one(kTestDevice, 4),
          .devices = {{kTestDevice, two_per_socket_in_order}},
          .allocated = {{"fakePod", "fakeContainer", {{kTestDevice, {"Dev1", "Dev2"}}}}},
          .expected = {{kTestDevice, kUnsatisfiable}},
      },
      {
          .description = "Single device type, more already allocated to container than requested",
          .pod = one(kTestDevice, 2),
          .devices = {{kTestDevice, two_per_socket_in_order}},
          .allocated = {{"fakePod",
                         "fakeContainer",
                         {{kTestDevice, {"Dev1", "Dev2", "Dev3", "Dev4"}}}}},
          .expected = {{kTestDevice, kUnsatisfiable}},
      },
  };
}

// Upstream's getPodScopeTestCases, and a sidecar scenario.
std::vector<HintsCase> PodScopeCases() {
  const std::vector<Device> two_per_socket = {OnNode("Dev1", 0), OnNode("Dev2", 0),
                                              OnNode("Dev3", 1), OnNode("Dev4", 1)};
  const std::vector<TopologyHint> either_socket = {
      {NumaMask{0}, true}, {NumaMask{1}, true}, {NumaMask{0, 1}, false}};
  // Three devices on node 0, two on node 1: requests of 2, 3 and 4 get different hints.
  const std::vector<Device> three_and_two = {OnNode("Dev1", 0), OnNode("Dev2", 0),
                                             OnNode("Dev3", 0), OnNode("Dev4", 1),
                                             OnNode("Dev5", 1)};
  const std::vector<TopologyHint> three_on_node_zero = {{NumaMask{0}, true},
                                                        {NumaMask{0, 1}, false}};
  return {
      {
          .description = "2 device types, user container only",
          .pod = MakePod("fakePod", {App("fakeContainer1", {{kTestDevice1, 2}}),
                                     App("fakeContainer2", {{kTestDevice2, 2}}),
                                     App("fakeContainer3", {{kNotRegistered, 2}})}),
          .devices = {{kTestDevice1, two_per_socket}, {kTestDevice2, two_per_socket}},
          .expected = {{kTestDevice1, either_socket}, {kTestDevice2, either_socket}},
      },
      {
          .description = "2 device types, request resources for init containers and user container",
          .pod = MakePod("fakePod",
                         {App("fakeContainer1", {{kTestDevice1, 1}, {kTestDevice2, 1}}),
                          App("fakeContainer2", {{kTestDevice1, 1}, {kTestDevice2, 1}}),
                          App("fakeContainer3", {{kNotRegistered, 1}})},
                         {Init("fakeInit1", {{kTestDevice1, 1}, {kTestDevice2, 1}}),
                          Init("fakeInit2", {{kTestDevice1, 1}, {kTestDevice2, 2}})}),
          .devices = {{kTestDevice1, two_per_socket}, {kTestDevice2, two_per_socket}},
          .expected = {{kTestDevice1, either_socket}, {kTestDevice2, either_socket}},
      },
      {
          .description =
              "2 device types, user container only, optimal on 1 NUMA node, forced cross-NUMA",
          .pod = MakePod("fakePod", {App("fakeContainer1", {{kTestDevice1, 1}, {kTestDevice2, 1}}),
                                     App("fakeContainer2", {{kTestDevice1, 1}, {kTestDevice2, 1}}),
                                     App("fakeContainer3", {{kNotRegistered, 1}})}),
          .devices = {{kTestDevice1, two_per_socket}, {kTestDevice2, two_per_socket}},
          .allocated = {{"fakeOtherPod",
                         "fakeOtherContainer",
                         {{kTestDevice1, {"Dev1", "Dev3"}}, {kTestDevice2, {"Dev1", "Dev3"}}}}},
          .expected = {{kTestDevice1, std::vector<TopologyHint>{{NumaMask{0, 1}, false}}},
                       {kTestDevice2, std::vector<TopologyHint>{{NumaMask{0, 1}, false}}}},
      },
      {
          // Not in upstream's table: the pod's request follows Kubernetes' PodLimits, which
          // upstream's getPodDeviceRequest uses. Sidecars run beside the app containers and
          // beside the init containers that start after them:
          //   testdevice1: app 1 + sidecar 1 = 2; init 2 + sidecar 1 = 3 -> 3.
          //   testdevice2: app 2 + sidecar 1 = 3; init 1 + sidecar 1 = 2 -> 3.
          // Counting the sidecar as a plain init container would ask for 2 of each, adding
          // everything up for 4 and 4: each gives other hints on these devices.
          .description = "2 device types, sidecar (restartable init container), init container "
                         "and user container",
          .pod = MakePod("fakePod", {App("fakeContainer1", {{kTestDevice1, 1}, {kTestDevice2, 2}})},
                         {Sidecar("fakeSidecar", {{kTestDevice1, 1}, {kTestDevice2, 1}}),
                          Init("fakeInit", {{kTestDevice1, 2}, {kTestDevice2, 1}})}),
          .devices = {{kTestDevice1, three_and_two}, {kTestDevice2, three_and_two}},
          .expected = {{kTestDevice1, three_on_node_zero}, {kTestDevice2, three_on_node_zero}},
      },
  };
}

class HintsTest : public TopologyCasesTest {
 protected:
  // A fresh manager on NUMA nodes 0 and 1 with `tc`'s devices and holdings; the pod and
  // "fakeOtherPod" are active, as upstream's activePods.
  void SetUpCase(const HintsCase& tc) {
    StartManager({0, 1}, {tc.pod.uid, "fakeOtherPod"});
    for (const auto& [resource, devices] : tc.devices) AddResource(resource, devices);
    for (const Holding& holding : tc.allocated) {
      PinTo(holding.pod_uid, holding.container, holding.ids);
    }
  }

  void ExpectHints(const HintsCase& tc, const TopologyHints& hints) {
    for (const auto& [resource, expected] : tc.expected) {
      auto it = hints.find(resource);
      ASSERT_NE(it, hints.end()) << "no entry for " << resource;
      EXPECT_EQ(Render(it->second), Render(expected)) << resource;
    }
    EXPECT_FALSE(hints.contains(kNotRegistered)) << "not a device-plugin resource";
  }
};

TEST_F(HintsTest, TestGetTopologyHints) {
  for (const HintsCase& tc : CommonCases()) {
    if (tc.covered_at_container_scope) continue;
    SCOPED_TRACE(tc.description);
    SetUpCase(tc);
    if (HasFatalFailure()) return;
    ExpectHints(tc, manager_->GetTopologyHints(tc.pod, tc.pod.containers[0]));
  }
}

TEST_F(HintsTest, TestGetPodTopologyHints) {
  std::vector<HintsCase> cases = CommonCases();
  for (HintsCase& tc : PodScopeCases()) cases.push_back(std::move(tc));
  for (const HintsCase& tc : cases) {
    SCOPED_TRACE(tc.description);
    SetUpCase(tc);
    if (HasFatalFailure()) return;
    ExpectHints(tc, manager_->GetPodTopologyHints(tc.pod));
  }
}

// Upstream's first common case, in the form devices without a TopologyInfo at all take.
TEST_F(HintsTest, TestGetTopologyHints_SingleRequestNoAlignmentWithoutTopologyInfo) {
  HintsCase tc{
      .description = "Single Request, no alignment",
      .pod = MakePod("fakePod", {App("fakeContainer", {{kTestDevice, 1}})}),
      .devices = {{kTestDevice, {NoTopology("Dev1"), NoTopology("Dev2")}}},
      .expected = {{kTestDevice, kNoPreference}},
  };
  SetUpCase(tc);
  ExpectHints(tc, manager_->GetTopologyHints(tc.pod, tc.pod.containers[0]));
  ExpectHints(tc, manager_->GetPodTopologyHints(tc.pod));
}

// A device whose TopologyInfo lists no node, left by the pod's init container for its app
// container, counts as one without topology in the app container's hints: the other devices
// must cover the request. The kubelet's hints come out empty for it (every mask is refused for
// a reusable device whose topology names no node); README lists the difference.
TEST_F(HintsTest, AReusableDeviceWhoseTopologyNamesNoNodeCountsAsOneWithoutTopology) {
  for (const bool empty_info : {true, false}) {
    SCOPED_TRACE(empty_info ? "TopologyInfo without nodes" : "no TopologyInfo");
    StartManager({0, 1}, {"fakePod"});
    std::vector<Device> devices =
        empty_info ? WithEmptyTopology({"Dev0"}) : std::vector<Device>{NoTopology("Dev0")};
    for (const Device& device : {OnNode("Dev1", 0), OnNode("Dev2", 1), OnNode("Dev3", 1)}) {
      devices.push_back(device);
    }
    AddResource(kTestDevice, devices);
    const Pod pod = MakePod("fakePod", {App("fakeContainer", {{kTestDevice, 2}})},
                            {Init("fakeInit", {{kTestDevice, 1}})});
    Pin(pod, pod.init_containers[0], {{kTestDevice, {"Dev0"}}});
    if (HasFatalFailure()) return;
    const TopologyHints hints = manager_->GetTopologyHints(pod, pod.containers[0]);
    ASSERT_TRUE(hints.contains(kTestDevice));
    EXPECT_EQ(Render(hints.at(kTestDevice)),
              Render(std::vector<TopologyHint>{{NumaMask{1}, true}, {NumaMask{0, 1}, false}}));
  }
}

// ---- TestTopologyAlignedAllocation ----

struct AlignedCase {
  std::string description;
  int64_t request = 0;
  std::vector<Device> devices = {};
  NumaMask affinity = {};
  // What the plugin's GetPreferredAllocation answers; nullopt: the plugin does not offer it.
  std::optional<std::vector<std::string>> plugin_prefers = {};
  std::vector<std::string> expected_preferred = {};
  // NUMA node -> devices allocated on it (devices without topology are not counted).
  std::map<int64_t, int> expected_alignment = {};
};

std::vector<AlignedCase> AlignedCases() {
  const std::vector<Device> one_per_socket = {OnNode("Dev1", 0), OnNode("Dev2", 1)};
  const std::vector<Device> two_per_socket = {OnNode("Dev1", 0), OnNode("Dev2", 1),
                                              OnNode("Dev3", 0), OnNode("Dev4", 1)};
  const std::vector<Device> three_per_socket = {OnNode("Dev1", 0), OnNode("Dev2", 1),
                                                OnNode("Dev3", 0), OnNode("Dev4", 1),
                                                OnNode("Dev5", 0), OnNode("Dev6", 1)};
  const std::vector<Device> hundred_per_socket = Concat(Range(0, 100, 0), Range(100, 100, 1));
  const std::vector<Device> three_and_ninety_seven = Concat(Range(0, 3, 0), Range(3, 97, 1));
  return {
      {
          .description = "Single Request, no alignment",
          .request = 1,
          .devices = {NoTopology("Dev1"), NoTopology("Dev2")},
          .affinity = NumaMask{0, 1},
          .expected_alignment = {},
      },
      {
          .description = "Request for 1, partial alignment",
          .request = 1,
          .devices = {NoTopology("Dev1"), OnNode("Dev2", 1)},
          .affinity = NumaMask{1},
          .expected_alignment = {{1, 1}},
      },
      {
          .description = "Single Request, socket 0",
          .request = 1,
          .devices = one_per_socket,
          .affinity = NumaMask{0},
          .expected_alignment = {{0, 1}},
      },
      {
          .description = "Single Request, socket 1",
          .request = 1,
          .devices = one_per_socket,
          .affinity = NumaMask{1},
          .expected_alignment = {{1, 1}},
      },
      {
          .description = "Request for 2, socket 0",
          .request = 2,
          .devices = two_per_socket,
          .affinity = NumaMask{0},
          .expected_alignment = {{0, 2}},
      },
      {
          .description = "Request for 2, socket 1",
          .request = 2,
          .devices = two_per_socket,
          .affinity = NumaMask{1},
          .expected_alignment = {{1, 2}},
      },
      {
          .description = "Request for 4, unsatisfiable, prefer socket 0",
          .request = 4,
          .devices = three_per_socket,
          .affinity = NumaMask{0},
          .expected_alignment = {{0, 3}, {1, 1}},
      },
      {
          .description = "Request for 4, unsatisfiable, prefer socket 1",
          .request = 4,
          .devices = three_per_socket,
          .affinity = NumaMask{1},
          .expected_alignment = {{0, 1}, {1, 3}},
      },
      {
          .description = "Request for 4, multisocket",
          .request = 4,
          .devices = {OnNode("Dev1", 0), OnNode("Dev2", 1), OnNode("Dev3", 2), OnNode("Dev4", 3),
                      OnNode("Dev5", 0), OnNode("Dev6", 1), OnNode("Dev7", 2), OnNode("Dev8", 3)},
          .affinity = NumaMask{1, 3},
          .expected_alignment = {{1, 2}, {3, 2}},
      },
      {
          .description = "Request for 5, socket 0, preferred aligned accepted",
          .request = 5,
          .devices = hundred_per_socket,
          .affinity = NumaMask{0},
          .plugin_prefers = std::vector<std::string>{"Dev0", "Dev19", "Dev83", "Dev42", "Dev77"},
          .expected_preferred = {"Dev0", "Dev19", "Dev83", "Dev42", "Dev77"},
          .expected_alignment = {{0, 5}},
      },
      {
          .description = "Request for 5, socket 0, preferred aligned accepted, unaligned ignored",
          .request = 5,
          .devices = hundred_per_socket,
          .affinity = NumaMask{0},
          .plugin_prefers = std::vector<std::string>{"Dev0", "Dev19", "Dev83", "Dev150", "Dev186"},
          .expected_preferred = {"Dev0", "Dev19", "Dev83"},
          .expected_alignment = {{0, 5}},
      },
      {
          .description = "Request for 5, socket 1, preferred aligned accepted, bogus ignored",
          .request = 5,
          .devices = Range(0, 100, 1),
          .affinity = NumaMask{1},
          .plugin_prefers = std::vector<std::string>{"Dev0", "Dev19", "Dev83", "bogus0", "bogus1"},
          .expected_preferred = {"Dev0", "Dev19", "Dev83"},
          .expected_alignment = {{1, 5}},
      },
      {
          .description = "Request for 5, multisocket, preferred accepted",
          .request = 5,
          .devices = three_and_ninety_seven,
          .affinity = NumaMask{0},
          .plugin_prefers = std::vector<std::string>{"Dev0", "Dev1", "Dev2", "Dev42", "Dev83"},
          .expected_preferred = {"Dev0", "Dev1", "Dev2", "Dev42", "Dev83"},
          .expected_alignment = {{0, 3}, {1, 2}},
      },
      {
          .description = "Request for 5, multisocket, preferred unaligned accepted, bogus ignored",
          .request = 5,
          .devices = three_and_ninety_seven,
          .affinity = NumaMask{0},
          .plugin_prefers = std::vector<std::string>{"Dev0", "Dev1", "Dev2", "Dev42", "bogus0"},
          .expected_preferred = {"Dev0", "Dev1", "Dev2", "Dev42"},
          .expected_alignment = {{0, 3}, {1, 2}},
      },
  };
}

// The cases admission_test.cc's TestTopologyAlignedAllocation leaves out: each allocates
// "containerName" of "podUID" under the case's admitted affinity.
TEST_F(TopologyCasesTest, TestTopologyAlignedAllocation) {
  for (const AlignedCase& tc : AlignedCases()) {
    SCOPED_TRACE(tc.description);
    StartManager({}, {"podUID"});
    std::shared_ptr<FakeEndpoint> endpoint =
        AddResource(kResource, tc.devices, tc.plugin_prefers.has_value());
    ASSERT_NE(endpoint, nullptr);
    if (tc.plugin_prefers.has_value()) {
      endpoint->OnGetPreferredAllocation(
          [answer = *tc.plugin_prefers](const std::vector<std::string>&,
                                        const std::vector<std::string>&, int) {
            return absl::StatusOr<v1beta1::PreferredAllocationResponse>(Preferred(answer));
          });
    }
    affinity_->Set("podUID", "containerName", tc.affinity);
    const Pod pod = MakePod("podUID", {App("containerName", {{kResource, tc.request}})});
    const absl::Status allocated = manager_->Allocate(pod, pod.containers[0]);
    ASSERT_TRUE(allocated.ok()) << allocated;

    const std::set<std::string> held = Held("podUID", "containerName", kResource);
    EXPECT_EQ(static_cast<int64_t>(held.size()), tc.request);
    for (const std::string& id : tc.expected_preferred) {
      EXPECT_TRUE(held.contains(id))
          << "preferred " << id << " not allocated; got " << absl::StrJoin(held, ",");
    }
    std::map<int64_t, int> alignment;
    for (const Device& device : tc.devices) {
      if (held.contains(device.id) && !device.numa_nodes.empty()) ++alignment[device.numa_nodes[0]];
    }
    EXPECT_EQ(alignment, tc.expected_alignment) << "got " << absl::StrJoin(held, ",");
    if (tc.plugin_prefers.has_value()) {
      EXPECT_EQ(endpoint->preferred_calls(), 1);
    }
  }
}

// ---- TestGetPreferredAllocationParameters ----

struct ParametersCase {
  std::string description;
  int64_t request = 0;
  std::vector<Device> devices = {};
  // Upstream's allocatedDevices: in use, by the pod's init container when reusable, otherwise
  // by another pod.
  std::vector<std::string> allocated = {};
  std::vector<std::string> reusable = {};
  NumaMask affinity = {};
  std::set<std::string> expected_available = {};
  std::set<std::string> expected_must_include = {};
  int expected_size = 0;
};

std::vector<ParametersCase> ParametersCases() {
  const std::vector<Device> eight_on_socket_zero = Range(0, 8, 0);
  const std::vector<Device> four_per_socket = Concat(Range(0, 4, 0), Range(4, 4, 1));
  const std::set<std::string> all_eight = {"Dev0", "Dev1", "Dev2", "Dev3",
                                           "Dev4", "Dev5", "Dev6", "Dev7"};
  return {
      {
          .description = "Request for 1, socket 0, 0 already allocated, 0 reusable",
          .request = 1,
          .devices = Range(0, 4, 0),
          .affinity = NumaMask{0},
          .expected_available = {"Dev0", "Dev1", "Dev2", "Dev3"},
          .expected_must_include = {},
          .expected_size = 1,
      },
      {
          .description = "Request for 4, socket 0, 2 already allocated, 2 reusable",
          .request = 4,
          .devices = eight_on_socket_zero,
          .allocated = {"Dev0", "Dev5"},
          .reusable = {"Dev0", "Dev5"},
          .affinity = NumaMask{0},
          .expected_available = all_eight,
          .expected_must_include = {"Dev0", "Dev5"},
          .expected_size = 4,
      },
      {
          .description = "Request for 4, socket 0, 4 already allocated, 2 reusable",
          .request = 4,
          .devices = eight_on_socket_zero,
          .allocated = {"Dev0", "Dev5", "Dev4", "Dev1"},
          .reusable = {"Dev0", "Dev5"},
          .affinity = NumaMask{0},
          .expected_available = {"Dev0", "Dev2", "Dev3", "Dev5", "Dev6", "Dev7"},
          .expected_must_include = {"Dev0", "Dev5"},
          .expected_size = 4,
      },
      {
          .description = "Request for 6, multisocket, 2 already allocated, 2 reusable",
          .request = 6,
          .devices = four_per_socket,
          .allocated = {"Dev1", "Dev6"},
          .reusable = {"Dev1", "Dev6"},
          .affinity = NumaMask{0},
          .expected_available = all_eight,
          .expected_must_include = {"Dev0", "Dev1", "Dev2", "Dev3", "Dev6"},
          .expected_size = 6,
      },
      {
          .description = "Request for 6, multisocket, 4 already allocated, 2 reusable",
          .request = 6,
          .devices = four_per_socket,
          .allocated = {"Dev0", "Dev1", "Dev6", "Dev7"},
          .reusable = {"Dev1", "Dev6"},
          .affinity = NumaMask{0},
          .expected_available = {"Dev1", "Dev2", "Dev3", "Dev4", "Dev5", "Dev6"},
          .expected_must_include = {"Dev1", "Dev2", "Dev3", "Dev6"},
          .expected_size = 6,
      },
  };
}

// Upstream's reusable devices are those of the pod's init container: here "podUID"'s init
// container holds them (no affinity), another pod holds the rest of allocatedDevices, and then
// "containerName" is allocated under the case's affinity. Both the devices offered and those
// the plugin must include are checked (upstream's own test compares `available` twice).
TEST_F(TopologyCasesTest, TestGetPreferredAllocationParameters) {
  for (const ParametersCase& tc : ParametersCases()) {
    SCOPED_TRACE(tc.description);
    StartManager({}, {"podUID", "otherPod"});
    std::shared_ptr<FakeEndpoint> endpoint = AddResource(kResource, tc.devices);
    ASSERT_NE(endpoint, nullptr);

    std::vector<std::string> others;
    for (const std::string& id : tc.allocated) {
      if (std::find(tc.reusable.begin(), tc.reusable.end(), id) == tc.reusable.end()) {
        others.push_back(id);
      }
    }
    if (!others.empty()) PinTo("otherPod", "otherContainer", {{kResource, others}});
    std::vector<Container> init_containers;
    if (!tc.reusable.empty()) {
      init_containers.push_back(
          Init("initContainer", {{kResource, static_cast<int64_t>(tc.reusable.size())}}));
    }
    const Pod pod =
        MakePod("podUID", {App("containerName", {{kResource, tc.request}})}, init_containers);
    if (!tc.reusable.empty()) Pin(pod, pod.init_containers[0], {{kResource, tc.reusable}});
    if (HasFatalFailure()) return;

    affinity_->Set("podUID", "containerName", tc.affinity);
    const size_t asked_before = endpoint->preferred_requests().size();
    const absl::Status allocated = manager_->Allocate(pod, pod.containers[0]);
    ASSERT_TRUE(allocated.ok()) << allocated;

    const std::vector<FakeEndpoint::PreferredRequest> requests = endpoint->preferred_requests();
    ASSERT_EQ(requests.size(), asked_before + 1) << "one GetPreferredAllocation call";
    const FakeEndpoint::PreferredRequest& asked = requests.back();
    EXPECT_EQ(std::set<std::string>(asked.available.begin(), asked.available.end()),
              tc.expected_available)
        << "available: " << absl::StrJoin(asked.available, ",");
    EXPECT_EQ(std::set<std::string>(asked.must_include.begin(), asked.must_include.end()),
              tc.expected_must_include)
        << "must include: " << absl::StrJoin(asked.must_include, ",");
    EXPECT_EQ(asked.size, tc.expected_size);
    EXPECT_EQ(static_cast<int64_t>(Held("podUID", "containerName", kResource).size()), tc.request);
  }
}

// ---- TestGetPodDeviceRequest ----

// Upstream calls getPodDeviceRequest directly; here the per-pod request is internal to
// GetPodTopologyHints, so it is read back from the hints. NUMA node k has 2^k devices of each
// resource (nodes 0..3, 15 devices): every request n from 1 to 15 is exactly the device count of
// one set of nodes, and no hinted set of nodes has fewer than n devices, so the smallest device
// count among the hinted sets is the request.
constexpr int kRequestNodes = 4;

std::vector<Device> PowersOfTwoPerNode() {
  std::vector<Device> devices;
  for (int node = 0; node < kRequestNodes; ++node) {
    for (int i = 0; i < (1 << node); ++i) {
      devices.push_back(OnNode(absl::StrCat("Dev", node, "-", i), node));
    }
  }
  return devices;
}

// The request GetPodTopologyHints generated `hints` for, on PowersOfTwoPerNode; -1 when there
// are no hints to read it from.
int64_t RequestOf(const Hints& hints) {
  if (!hints.has_value() || hints->empty()) return -1;
  int64_t smallest = -1;
  for (const TopologyHint& hint : *hints) {
    int64_t count = 0;
    for (int node : hint.numa_affinity.Nodes()) count += int64_t{1} << node;
    if (smallest < 0 || count < smallest) smallest = count;
  }
  return smallest;
}

struct RequestCase {
  std::string description;
  Pod pod;
  std::vector<std::string> registered = {};
  std::map<std::string, int64_t> expected = {};
};

std::vector<RequestCase> RequestCases() {
  const std::string gpu = "gpu";
  const std::string nic = "nic";
  // Upstream's containers also ask for CPU and memory, which no plugin provides; the
  // unregistered resource stands for them.
  const auto with = [](std::map<std::string, int64_t> devices) {
    devices[kNotRegistered] = 2;
    return devices;
  };
  return {
      {
          .description = "empty pod",
          .pod = MakePod("pod", {}),
          .registered = {},
          .expected = {},
      },
      {
          .description = "Init container requests device plugin resource",
          .pod = MakePod("pod", {}, {Init("init1", with({{gpu, 2}}))}),
          .registered = {gpu},
          .expected = {{gpu, 2}},
      },
      {
          .description = "Init containers request device plugin resource",
          .pod = MakePod("pod", {},
                         {Init("init1", with({{gpu, 2}})), Init("init2", with({{gpu, 4}}))}),
          .registered = {gpu},
          .expected = {{gpu, 4}},
      },
      {
          .description = "User container requests device plugin resource",
          .pod = MakePod("pod", {App("app1", with({{gpu, 2}}))}),
          .registered = {gpu},
          .expected = {{gpu, 2}},
      },
      {
          .description = "Init containers and user containers request the same amount of device "
                         "plugin resources",
          .pod = MakePod(
              "pod",
              {App("app1", with({{gpu, 1}, {nic, 1}})), App("app2", with({{gpu, 1}, {nic, 1}}))},
              {Init("init1", with({{gpu, 2}, {nic, 2}})),
               Init("init2", with({{gpu, 2}, {nic, 2}}))}),
          .registered = {gpu, nic},
          .expected = {{gpu, 2}, {nic, 2}},
      },
      {
          .description =
              "Init containers request more device plugin resources than user containers",
          .pod = MakePod("pod",
                         {App("app1", with({{gpu, 1}, {nic, 1}})), App("app2", with({{gpu, 1}}))},
                         {Init("init1", with({{gpu, 2}, {nic, 1}})),
                          Init("init2", with({{gpu, 3}, {nic, 2}}))}),
          .registered = {gpu, nic},
          .expected = {{gpu, 3}, {nic, 2}},
      },
      {
          .description =
              "User containers request more device plugin resources than init containers",
          .pod = MakePod(
              "pod",
              {App("app1", with({{gpu, 3}, {nic, 2}})), App("app2", with({{gpu, 3}, {nic, 2}}))},
              {Init("init1", with({{gpu, 2}, {nic, 1}})),
               Init("init2", with({{gpu, 2}, {nic, 1}}))}),
          .registered = {gpu, nic},
          .expected = {{gpu, 6}, {nic, 4}},
      },
      // Restartable init containers (sidecars), as Kubernetes' PodLimits counts them: they run
      // beside the app containers and beside every init container started after them.
      {
          .description = "Sidecar started before an init container adds to its request",
          .pod = MakePod("pod", {App("app1", {{gpu, 1}})},
                         {Sidecar("sidecar1", {{gpu, 1}}), Init("init1", {{gpu, 2}})}),
          .registered = {gpu},
          .expected = {{gpu, 3}},
      },
      {
          .description = "Sidecar started after an init container does not add to its request",
          .pod = MakePod("pod", {App("app1", {{gpu, 1}})},
                         {Init("init1", {{gpu, 2}}), Sidecar("sidecar1", {{gpu, 1}})}),
          .registered = {gpu},
          .expected = {{gpu, 2}},
      },
      {
          .description = "Sidecars add to the user containers",
          .pod = MakePod("pod", {App("app1", {{gpu, 3}})},
                         {Sidecar("sidecar1", {{gpu, 1}}), Sidecar("sidecar2", {{gpu, 1}}),
                          Init("init1", {{gpu, 1}})}),
          .registered = {gpu},
          .expected = {{gpu, 5}},
      },
      // Not upstream's: counts whose sum does not fit in 64 bits (each one does, as a manifest
      // may give them) ask for more than the node has, and give no hints.
      {
          .description = "Requests whose sum overflows ask for more than any node has",
          // Wrapped around, the sum would be 3.
          .pod = MakePod("pod", {App("app1", {{gpu, std::numeric_limits<int64_t>::max()}}),
                                 App("app2", {{gpu, std::numeric_limits<int64_t>::max()}}),
                                 App("app3", {{gpu, 5}})}),
          .registered = {gpu},
          .expected = {{gpu, -1}},
      },
  };
}

TEST_F(TopologyCasesTest, TestGetPodDeviceRequest) {
  for (const RequestCase& tc : RequestCases()) {
    SCOPED_TRACE(tc.description);
    StartManager({0, 1, 2, 3}, {tc.pod.uid});
    if (HasFatalFailure()) return;
    for (const std::string& resource : tc.registered) AddResource(resource, PowersOfTwoPerNode());
    const TopologyHints hints = manager_->GetPodTopologyHints(tc.pod);
    std::map<std::string, int64_t> requests;
    for (const auto& [resource, resource_hints] : hints) {
      requests[resource] = RequestOf(resource_hints);
    }
    EXPECT_EQ(requests, tc.expected);
  }
}

// ---- TestGetTopologyHintsWithUpdates ----

// Upstream's race check: a plugin's snapshots (1000 devices on node 0, sent 10 times) applied
// while hints are asked for over and over, at container and at pod scope. Every answer must be
// the one the unchanged devices give; a run under ThreadSanitizer also checks for data races.
TEST_F(TopologyCasesTest, TestGetTopologyHintsWithUpdates) {
  constexpr int kUpdates = 10;
  std::vector<Device> devices;
  for (int i = 0; i < 1000; ++i) devices.push_back(OnNode(absl::StrCat("dev-", i), 0));
  const Pod pod = MakePod("pod", {App("container", {{kResource, 1}})});
  const std::string expected = Render(std::vector<TopologyHint>{{NumaMask{0}, true}});

  const std::vector<std::pair<std::string, std::function<TopologyHints()>>> queries = {
      {"GetTopologyHints data race when update device",
       [&] { return manager_->GetTopologyHints(pod, pod.containers[0]); }},
      {"GetPodTopologyHints data race when update device",
       [&] { return manager_->GetPodTopologyHints(pod); }},
  };
  for (const auto& entry : queries) {
    // A plain reference (clang-14 lambdas cannot capture structured bindings).
    const std::function<TopologyHints()>& query = entry.second;
    SCOPED_TRACE(entry.first);
    StartManager({0}, {pod.uid});
    if (HasFatalFailure()) return;
    std::shared_ptr<FakeEndpoint> endpoint = AddResource(kResource, devices);
    ASSERT_NE(endpoint, nullptr);

    std::atomic<bool> updated{false};
    std::atomic<int> pushed{0};
    std::thread updater([&] {
      for (int i = 0; i < kUpdates; ++i) {
        if (endpoint->PushDevices(devices)) pushed.fetch_add(1);
      }
      updated.store(true);
    });
    int asked = 0;
    std::vector<std::string> wrong;
    std::thread asker([&] {
      // At least once, and for as long as the updates go on.
      do {
        const TopologyHints hints = query();
        ++asked;
        auto it = hints.find(kResource);
        const std::string got = it == hints.end() ? "missing" : Render(it->second);
        if (got != expected) wrong.push_back(got);
      } while (!updated.load());
    });
    updater.join();
    asker.join();

    EXPECT_EQ(pushed.load(), kUpdates);
    EXPECT_GE(asked, 1);
    EXPECT_TRUE(wrong.empty()) << wrong.size() << " of " << asked << " answers wrong, first "
                               << (wrong.empty() ? "" : wrong.front());
  }
}

}  // namespace
}  // namespace devmgr::devicemanager
