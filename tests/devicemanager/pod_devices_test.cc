#include "devicemanager/pod_devices.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "devicemanager/reservations.h"

namespace devmgr::devicemanager {
namespace {

ContainerAllocation MakeAllocation(checkpoint::DevicesPerNuma devices,
                                   const std::string& env_value = "") {
  ContainerAllocation allocation;
  allocation.devices = std::move(devices);
  if (!env_value.empty()) (*allocation.response.mutable_envs())["VISIBLE"] = env_value;
  return allocation;
}

// Upstream's TestGetContainerDevices: topology is rebuilt from the NUMA keys; a device under
// two nodes gets both, one under -1 gets none.
TEST(PodDevicesTest, TestGetContainerDevices) {
  PodDevices pod_devices;
  pod_devices.Insert("pod1", "con1", "res1",
                     MakeAllocation({{0, {"dev1", "dev2"}}, {1, {"dev2", "dev3"}}}));
  pod_devices.Insert("pod1", "con1", "res2", MakeAllocation({{checkpoint::kNoNumaNode, {"x"}}}));
  pod_devices.Insert("pod1", "con2", "res1", MakeAllocation({{0, {"dev4"}}}));

  ResourceDevices devices = pod_devices.ContainerDevices("pod1", "con1");
  ASSERT_EQ(devices.size(), 2u);
  ASSERT_EQ(devices["res1"].size(), 3u);
  EXPECT_EQ(devices["res1"]["dev1"].numa_nodes, (std::vector<int64_t>{0}));
  EXPECT_EQ(devices["res1"]["dev2"].numa_nodes, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(devices["res1"]["dev3"].numa_nodes, (std::vector<int64_t>{1}));
  EXPECT_TRUE(devices["res2"]["x"].numa_nodes.empty());
  EXPECT_TRUE(pod_devices.ContainerDevices("pod1", "nope").empty());
  EXPECT_TRUE(pod_devices.ContainerDevices("nope", "con1").empty());
}

TEST(PodDevicesTest, DeleteAndDeviceIds) {
  PodDevices pod_devices;
  pod_devices.Insert("pod1", "c", "res1", MakeAllocation({{0, {"a", "b"}}}));
  pod_devices.Insert("pod2", "c", "res1", MakeAllocation({{1, {"c"}}}));
  pod_devices.Insert("pod2", "c", "res2", MakeAllocation({{1, {"z"}}}));
  EXPECT_EQ(pod_devices.DeviceIds()["res1"], (std::set<std::string>{"a", "b", "c"}));
  EXPECT_EQ(pod_devices.PodsNotIn({}), (std::vector<std::string>{"pod1", "pod2"}));
  EXPECT_EQ(pod_devices.PodsNotIn({"a", "pod1", "pod15"}), std::vector<std::string>{"pod2"});
  EXPECT_TRUE(pod_devices.PodsNotIn({"pod1", "pod2", "zzz"}).empty());
  pod_devices.Delete({"pod2", "unknown"});
  EXPECT_TRUE(pod_devices.HasPod("pod1"));
  EXPECT_FALSE(pod_devices.HasPod("pod2"));
  EXPECT_EQ(pod_devices.DeviceIds().count("res2"), 0u);
  ASSERT_NE(pod_devices.FindDevices("pod1", "c", "res1"), nullptr);
  EXPECT_EQ(pod_devices.FindDevices("pod1", "c", "res2"), nullptr);
}

// The revision changes with every change and only then, and two values built apart never
// share one (what a reader keeping an answer built from them relies on).
TEST(PodDevicesTest, RevisionChangesWithEveryChange) {
  PodDevices pod_devices;
  uint64_t last = pod_devices.revision();
  auto changed = [&] {
    const bool different = pod_devices.revision() != last;
    last = pod_devices.revision();
    return different;
  };
  pod_devices.Insert("pod1", "c", "res1", MakeAllocation({{0, {"a"}}}));
  EXPECT_TRUE(changed());
  pod_devices.Insert("pod1", "c", "res1", MakeAllocation({{0, {"b"}}}));
  EXPECT_TRUE(changed());
  pod_devices.Remove("pod1", "c", "unknown");
  pod_devices.Remove("pod1", "unknown", "res1");
  pod_devices.Delete({"unknown"});
  EXPECT_FALSE(changed());
  pod_devices.Remove("pod1", "c", "res1");
  EXPECT_TRUE(changed());
  pod_devices.Insert("pod2", "c", "res1", MakeAllocation({{0, {"a"}}}));
  EXPECT_TRUE(changed());
  // Each pod has the revision of its own last change; one that holds nothing has 0.
  pod_devices.Insert("pod3", "c", "res1", MakeAllocation({{0, {"z"}}}));
  const uint64_t pod2 = pod_devices.PodRevision("pod2");
  EXPECT_NE(pod2, 0u);
  EXPECT_EQ(pod_devices.PodRevision("pod3"), pod_devices.revision());
  pod_devices.Insert("pod3", "d", "res1", MakeAllocation({{0, {"y"}}}));
  EXPECT_EQ(pod_devices.PodRevision("pod2"), pod2);
  EXPECT_EQ(pod_devices.PodRevision("pod1"), 0u);
  pod_devices.Delete({"pod3"});
  EXPECT_EQ(pod_devices.PodRevision("pod3"), 0u);
  changed();
  pod_devices.Delete({"pod2"});
  EXPECT_TRUE(changed());

  PodDevices other;
  other.Insert("pod1", "c", "res1", MakeAllocation({{0, {"a"}}}));
  EXPECT_NE(other.revision(), pod_devices.revision());
  pod_devices = std::move(other);  // as a restore from the checkpoint does
  EXPECT_TRUE(changed());
}

// A reader that built from revision R asks which pods changed since: every Insert, Remove and
// Delete names its pod; a restore from the checkpoint tells nothing from before it.
TEST(PodDevicesTest, PodsChangedSinceNamesThePodOfEachChange) {
  using Uids = std::optional<std::vector<std::string>>;
  PodDevices pod_devices;
  pod_devices.Insert("pod1", "c", "res1", MakeAllocation({{0, {"a"}}}));
  pod_devices.Insert("pod2", "c", "res1", MakeAllocation({{0, {"b"}}}));
  const uint64_t built = pod_devices.revision();
  EXPECT_EQ(pod_devices.PodsChangedSince(built), Uids(std::vector<std::string>()));
  pod_devices.Insert("pod3", "c", "res1", MakeAllocation({{0, {"c"}}}));
  pod_devices.Remove("pod1", "c", "res1");
  pod_devices.Insert("pod3", "d", "res1", MakeAllocation({{0, {"d"}}}));
  EXPECT_EQ(pod_devices.PodsChangedSince(built), Uids({"pod1", "pod3"}));
  const uint64_t later = pod_devices.revision();
  pod_devices.Delete({"pod2", "unknown"});
  EXPECT_EQ(pod_devices.PodsChangedSince(later), Uids({"pod2"}));
  EXPECT_EQ(pod_devices.PodsChangedSince(0), Uids({"pod1", "pod2", "pod3"}));

  std::vector<checkpoint::PodDevicesEntry> entries = pod_devices.ToCheckpoint();
  PodDevices restored = PodDevices::FromCheckpoint(std::move(entries));
  EXPECT_EQ(restored.PodsChangedSince(later), std::nullopt);
  EXPECT_EQ(restored.PodsChangedSince(restored.revision()), Uids(std::vector<std::string>()));
}

// The held-device index follows every change: a device two containers list stays held until
// both let it go, one listed under two NUMA nodes counts once, and a replaced allocation frees
// what it no longer lists.
// Pods and containers whose names share a prefix, several allocations per pod: each lookup,
// removal and revision stays with its own pod and container.
TEST(PodDevicesTest, PodsWithSeveralAllocationsStayApart) {
  PodDevices pod_devices;
  pod_devices.Insert("pod1", "c", "res1", MakeAllocation({{0, {"a"}}}));
  pod_devices.Insert("pod1", "c", "res2", MakeAllocation({{0, {"b"}}}));
  pod_devices.Insert("pod1", "c2", "res1", MakeAllocation({{0, {"c"}}}));
  pod_devices.Insert("pod10", "c", "res1", MakeAllocation({{0, {"d"}}}));
  pod_devices.Insert("pod", "c", "res1", MakeAllocation({{0, {"e"}}}));

  const ResourceDevices c = pod_devices.ContainerDevices("pod1", "c");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_TRUE(c.at("res1").contains("a"));
  EXPECT_TRUE(c.at("res2").contains("b"));
  EXPECT_EQ(pod_devices.ContainerDevices("pod1", "c2").at("res1").count("c"), 1u);
  EXPECT_TRUE(pod_devices.ContainerDevices("pod1", "").empty());
  EXPECT_EQ(pod_devices.PodsNotIn({"pod10"}), (std::vector<std::string>{"pod", "pod1"}));
  EXPECT_EQ(pod_devices.RenderedEntries().size(), 5u);

  // Every allocation of the pod carries its latest revision; other pods keep theirs.
  const uint64_t pod10 = pod_devices.PodRevision("pod10");
  pod_devices.Remove("pod1", "c", "res2");
  EXPECT_EQ(pod_devices.PodRevision("pod1"), pod_devices.revision());
  EXPECT_EQ(pod_devices.PodRevision("pod10"), pod10);
  EXPECT_FALSE(pod_devices.Holds("res2", "b"));
  pod_devices.Remove("pod1", "c", "res1");
  pod_devices.Remove("pod1", "c2", "res1");
  EXPECT_FALSE(pod_devices.HasPod("pod1"));
  EXPECT_EQ(pod_devices.PodRevision("pod1"), 0u);
  EXPECT_TRUE(pod_devices.HasPod("pod"));
  EXPECT_TRUE(pod_devices.HasPod("pod10"));
  pod_devices.Delete({"pod"});
  EXPECT_FALSE(pod_devices.HasPod("pod"));
  EXPECT_TRUE(pod_devices.HasPod("pod10"));
  EXPECT_EQ(pod_devices.PodsNotIn({}), (std::vector<std::string>{"pod10"}));
}

TEST(PodDevicesTest, HoldsFollowsInsertReplaceRemoveAndDelete) {
  PodDevices pod_devices;
  EXPECT_FALSE(pod_devices.HoldsAny("res1"));
  pod_devices.Insert("pod1", "init", "res1", MakeAllocation({{0, {"a", "b"}}, {1, {"b"}}}));
  pod_devices.Insert("pod1", "app", "res1", MakeAllocation({{0, {"a"}}}));
  EXPECT_TRUE(pod_devices.Holds("res1", "a"));
  EXPECT_TRUE(pod_devices.Holds("res1", "b"));
  EXPECT_FALSE(pod_devices.Holds("res1", "c"));
  EXPECT_FALSE(pod_devices.Holds("res2", "a"));

  pod_devices.Remove("pod1", "init", "res1");
  EXPECT_TRUE(pod_devices.Holds("res1", "a")) << "the app container still holds it";
  EXPECT_FALSE(pod_devices.Holds("res1", "b"));

  pod_devices.Insert("pod1", "app", "res1", MakeAllocation({{0, {"c"}}}));
  EXPECT_FALSE(pod_devices.Holds("res1", "a")) << "replaced";
  EXPECT_TRUE(pod_devices.Holds("res1", "c"));
  EXPECT_EQ(pod_devices.DeviceIds()["res1"], (std::set<std::string>{"c"}));

  pod_devices.Insert("pod2", "c", "res2", MakeAllocation({{checkpoint::kNoNumaNode, {"z"}}}));
  pod_devices.Delete({"pod1"});
  EXPECT_FALSE(pod_devices.HoldsAny("res1"));
  EXPECT_TRUE(pod_devices.Holds("res2", "z"));
  pod_devices.Remove("pod2", "c", "res2");
  EXPECT_FALSE(pod_devices.HoldsAny("res2"));
  EXPECT_TRUE(pod_devices.DeviceIds().empty());
}

// Upstream's TestGetPodAndContainerForDevice (newest tree): the owner of a device is looked up
// within its resource, since two resources may use the same device ID. Upstream's "reserved
// device" case has no counterpart here: devices an admission has reserved are kept apart
// (Reservations) and enter PodDevices only when committed; the manager-level test
// ResourceHealthTest.ReservedDeviceHasNoOwnerUntilCommitted covers it.
TEST(PodDevicesTest, TestGetPodAndContainerForDevice) {
  constexpr char kResource1[] = "domain1.com/resource1";
  constexpr char kResource2[] = "domain2.com/resource2";
  PodDevices pod_devices;
  pod_devices.Insert("pod1", "container1", kResource1, MakeAllocation({{0, {"dev1"}}}));
  pod_devices.Insert("pod2", "container2", kResource2, MakeAllocation({{0, {"dev1"}}}));

  struct Case {
    const char* name;
    const char* resource;
    const char* device;
    std::optional<std::pair<std::string, std::string>> expected;
  };
  const Case cases[] = {
      {"committed device", kResource1, "dev1", std::make_pair("pod1", "container1")},
      {"same device ID under another resource", kResource2, "dev1",
       std::make_pair("pod2", "container2")},
      {"unknown device", kResource1, "unknown-device", std::nullopt},
      {"unknown resource", "domain3.com/unknown", "dev1", std::nullopt},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(pod_devices.PodAndContainerForDevice(c.resource, c.device), c.expected) << c.name;
  }
}

// The owner index follows the allocations: of several holders the first in pod and container
// order answers, and a device leaves the index with its last holder.
TEST(PodDevicesTest, OwnersFollowInsertRemoveAndDelete) {
  PodDevices pod_devices;
  pod_devices.Insert("pod2", "app", "res1", MakeAllocation({{0, {"a"}}, {1, {"a"}}}));
  pod_devices.Insert("pod2", "init", "res1", MakeAllocation({{0, {"a", "b"}}}));
  pod_devices.Insert("pod1", "app", "res2", MakeAllocation({{0, {"a"}}}));
  using Owner = std::optional<std::pair<std::string, std::string>>;
  EXPECT_EQ(pod_devices.PodAndContainerForDevice("res1", "a"), Owner({"pod2", "app"}));
  EXPECT_EQ(pod_devices.PodAndContainerForDevice("res1", "b"), Owner({"pod2", "init"}));
  EXPECT_EQ(pod_devices.PodsHolding("res1"), std::vector<std::string>{"pod2"});
  EXPECT_EQ(pod_devices.PodsHolding("res2"), std::vector<std::string>{"pod1"});
  EXPECT_TRUE(pod_devices.PodsHolding("res3").empty());

  pod_devices.Remove("pod2", "app", "res1");
  EXPECT_EQ(pod_devices.PodAndContainerForDevice("res1", "a"), Owner({"pod2", "init"}));
  pod_devices.Insert("pod2", "init", "res1", MakeAllocation({{0, {"c"}}}));
  EXPECT_EQ(pod_devices.PodAndContainerForDevice("res1", "a"), std::nullopt) << "replaced";

  // Moved, as a restore from the checkpoint moves a whole value: the index moves with it.
  PodDevices moved = std::move(pod_devices);
  EXPECT_EQ(moved.PodAndContainerForDevice("res1", "c"), Owner({"pod2", "init"}));
  moved.Delete({"pod2"});
  EXPECT_EQ(moved.PodAndContainerForDevice("res1", "c"), std::nullopt);
  EXPECT_EQ(moved.PodAndContainerForDevice("res2", "a"), Owner({"pod1", "app"}));
}

TEST(PodDevicesTest, NotHeldKeepsTheFreeHealthyIdsInOrder) {
  PodDevices pod_devices;
  const DeviceTable devices({{"e", Health::kHealthy, {}},
                             {"a", Health::kHealthy, {}},
                             {"b", Health::kHealthy, {}},
                             {"u", Health::kUnhealthy, {}},
                             {"c", Health::kHealthy, {}},
                             {"d", Health::kHealthy, {}}});
  const IdSet healthy({"a", "b", "c", "d", "e"});
  EXPECT_EQ(pod_devices.NotHeld("res1", devices), healthy);
  pod_devices.Insert("pod1", "app", "res1", MakeAllocation({{0, {"b"}}, {1, {"e", "x"}}}));
  pod_devices.Insert("pod2", "app", "res1", MakeAllocation({{0, {"0"}}}));
  pod_devices.Insert("pod2", "app", "res2", MakeAllocation({{0, {"a"}}}));
  EXPECT_EQ(pod_devices.NotHeld("res1", devices), IdSet({"a", "c", "d"}));
  EXPECT_EQ(pod_devices.NotHeld("res2", devices), IdSet({"b", "c", "d", "e"}));
  EXPECT_TRUE(pod_devices.NotHeld("res1", DeviceTable()).empty());
}

TEST(PodDevicesTest, CheckpointRoundTripKeepsResponses) {
  PodDevices pod_devices;
  pod_devices.Insert("pod1", "con1", "res1", MakeAllocation({{0, {"dev1"}}}, "dev1"));
  pod_devices.Insert("pod2", "con1", "res1", MakeAllocation({{1, {"dev2"}}}, "dev2"));
  std::vector<checkpoint::PodDevicesEntry> entries = pod_devices.ToCheckpoint();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].pod_uid, "pod1");
  EXPECT_EQ(entries[1].device_ids.at(1), (std::vector<std::string>{"dev2"}));

  std::vector<std::string> skipped;
  PodDevices restored = PodDevices::FromCheckpoint(entries, &skipped);
  EXPECT_TRUE(skipped.empty());
  std::optional<v1beta1::ContainerAllocateResponse> response =
      restored.Response("pod2", "con1", "res1");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->envs().at("VISIBLE"), "dev2");
  EXPECT_FALSE(restored.Response("pod2", "con1", "res9").has_value());
  EXPECT_EQ(restored.ToCheckpoint(), entries);  // byte-stable
}

TEST(PodDevicesTest, EntriesOutOfOrderOrRepeatedAreRestoredAsInOrder) {
  // devmgr writes its entries in key order (restored at the end of the map, one after the
  // other); a kubelet writes them in no order, and a hand-edited file may repeat one.
  PodDevices in_order;
  in_order.Insert("pod1", "con1", "res1", MakeAllocation({{0, {"dev1"}}}, "a"));
  in_order.Insert("pod1", "con2", "res1", MakeAllocation({{0, {"dev3"}}}, "c"));
  in_order.Insert("pod2", "con1", "res1", MakeAllocation({{1, {"dev2"}}}, "b"));
  const std::vector<checkpoint::PodDevicesEntry> sorted = in_order.ToCheckpoint();

  PodDevices restored = PodDevices::FromCheckpoint(sorted);
  EXPECT_EQ(restored.ToCheckpoint(), sorted);
  EXPECT_EQ(restored.RenderedEntries().size(), 3u);
  EXPECT_EQ(checkpoint::EncodeRendered(restored.RenderedEntries(), {}),
            checkpoint::EncodeRendered(in_order.RenderedEntries(), {}));
  EXPECT_TRUE(restored.Holds("res1", "dev3"));
  EXPECT_GT(restored.PodRevision("pod1"), 0u);
  EXPECT_GT(restored.PodRevision("pod2"), 0u);

  // pod2 first, then pod1's con2 with devices a later entry replaces.
  checkpoint::PodDevicesEntry replaced = sorted[1];
  replaced.device_ids = {{0, {"dev9"}}};
  PodDevices shuffled = PodDevices::FromCheckpoint({sorted[2], replaced, sorted[0], sorted[1]});
  EXPECT_EQ(shuffled.ToCheckpoint(), sorted);
  EXPECT_FALSE(shuffled.Holds("res1", "dev9")) << "the earlier of two entries is not kept";
  EXPECT_EQ(shuffled.PodAndContainerForDevice("res1", "dev3"),
            std::make_pair(std::string("pod1"), std::string("con2")));
  EXPECT_GT(shuffled.PodRevision("pod2"), 0u);
}

TEST(PodDevicesTest, UndecodableResponseIsSkipped) {
  checkpoint::PodDevicesEntry good{"pod1", "con1", "res1", {{0, {"dev1"}}}, ""};
  checkpoint::PodDevicesEntry bad{"pod2", "con1", "res1", {{0, {"dev2"}}}, "\xff\xff\xff"};
  std::vector<std::string> skipped;
  PodDevices restored = PodDevices::FromCheckpoint({good, bad}, &skipped);
  EXPECT_TRUE(restored.HasPod("pod1"));
  EXPECT_FALSE(restored.HasPod("pod2"));
  EXPECT_EQ(skipped, (std::vector<std::string>{"pod2/con1/res1"}));
}

// The devices of `resource` a pod's containers hold together, gathered as the manager's
// pod-scope topology hints gather them: each container's allocation looked up by FindDevices.
std::set<std::string> PodHeld(const PodDevices& pod_devices, const std::string& pod_uid,
                              const std::vector<std::string>& containers,
                              const std::string& resource) {
  std::set<std::string> held;
  for (const std::string& container : containers) {
    const checkpoint::DevicesPerNuma* devices =
        pod_devices.FindDevices(pod_uid, container, resource);
    if (devices == nullptr) continue;
    for (const auto& [numa, ids] : *devices) held.insert(ids.begin(), ids.end());
  }
  return held;
}

// Upstream's TestPodDevices: a pod's devices of a resource are the union of what its containers
// hold; an unknown pod or resource has none, and an admission still in flight (here in
// Reservations, beside PodDevices) shows nothing.
TEST(PodDevicesTest, TestPodDevices) {
  const std::string pod = "pod";
  const std::string reserved_pod = "reserved-pod";
  const std::vector<std::string> containers = {"container1", "container2"};
  const std::string resource1 = "example.com/resource1";
  const std::string resource2 = "example.com/resource2";

  PodDevices pod_devices;
  pod_devices.Insert(pod, "container1", resource1, MakeAllocation({{0, {"dev1"}}}));
  pod_devices.Insert(pod, "container2", resource1, MakeAllocation({{1, {"dev2"}}}));
  pod_devices.Insert(pod, "container1", resource2, MakeAllocation({{0, {"dev3"}}}));

  Reservations reservations;
  ASSERT_TRUE(reservations.Begin(reserved_pod, "container1", resource1));
  ReservedDevices reserved{resource1, {}, {}, {}};
  reservations.Reserve("reserved-dev", reserved);

  EXPECT_EQ(PodHeld(pod_devices, pod, containers, resource1),
            (std::set<std::string>{"dev1", "dev2"}));
  EXPECT_EQ(PodHeld(pod_devices, pod, containers, resource2), (std::set<std::string>{"dev3"}));
  EXPECT_TRUE(PodHeld(pod_devices, pod, containers, "example.com/unknown").empty());
  EXPECT_TRUE(PodHeld(pod_devices, "unknown-pod", containers, resource1).empty());
  EXPECT_TRUE(PodHeld(pod_devices, reserved_pod, containers, resource1).empty())
      << "an admission in flight holds nothing yet";
  EXPECT_FALSE(pod_devices.HasPod(reserved_pod));

  // The pods holding each resource, by the same index.
  EXPECT_EQ(pod_devices.PodsHolding(resource1), std::vector<std::string>{pod});
  EXPECT_EQ(pod_devices.PodsHolding(resource2), std::vector<std::string>{pod});
  EXPECT_TRUE(pod_devices.PodsHolding("example.com/unknown").empty());
}

}  // namespace
}  // namespace devmgr::devicemanager
