#include "devicemanager/reservations.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "devicemanager/device_table.h"
#include "devicemanager/pod_devices.h"

namespace devmgr::devicemanager {
namespace {

constexpr char kGpu[] = "example.com/gpu";

ReservedDevices For(const std::string& resource) { return ReservedDevices{resource, {}, {}, {}}; }

TEST(ReservationsTest, OneAllocationPerContainerAndResourceInFlight) {
  Reservations reservations;
  EXPECT_TRUE(reservations.Begin("pod1", "c", kGpu));
  EXPECT_FALSE(reservations.Begin("pod1", "c", kGpu));
  EXPECT_TRUE(reservations.Begin("pod1", "c", "example.com/nic"));
  EXPECT_TRUE(reservations.Begin("pod1", "d", kGpu));
  reservations.Release("pod1", "c", For(kGpu), {});
  EXPECT_TRUE(reservations.Begin("pod1", "c", kGpu)) << "released";
}

TEST(ReservationsTest, ReservedDevicesAreInUseUntilReleased) {
  Reservations reservations;
  ASSERT_TRUE(reservations.Begin("pod1", "c", kGpu));
  ReservedDevices devices = For(kGpu);
  reservations.Reserve("d1", devices);
  reservations.Reserve("d0", devices);
  EXPECT_EQ(devices.ids, (std::vector<std::string>{"d1", "d0"}));
  EXPECT_EQ(devices.new_ids, devices.ids);
  EXPECT_TRUE(reservations.IsReserved(kGpu, "d0"));
  EXPECT_FALSE(reservations.IsReserved(kGpu, "d2"));
  EXPECT_FALSE(reservations.IsReserved("example.com/nic", "d0"));
  IdSet free({"d0", "d1", "d2"});
  reservations.EraseReserved(kGpu, free);
  EXPECT_EQ(free, IdSet({"d2"}));

  reservations.Release("pod1", "c", devices, devices.from_reuse);
  EXPECT_FALSE(reservations.IsReserved(kGpu, "d0"));
  EXPECT_FALSE(reservations.IsReserved(kGpu, "d1"));
}

TEST(ReservationsTest, InitContainerDevicesAreReusableAfterCommit) {
  Reservations reservations;
  ASSERT_TRUE(reservations.Begin("pod1", "init", kGpu));
  ReservedDevices init = For(kGpu);
  reservations.Reserve("d0", init);
  reservations.Reserve("d1", init);
  reservations.Commit("pod1", "init", init, /*reusable_by_pod=*/true);
  EXPECT_FALSE(reservations.IsReserved(kGpu, "d0")) << "committed: held, no longer reserved";
  EXPECT_EQ(reservations.Reusable("pod1", kGpu), (std::set<std::string>{"d0", "d1"}));

  // The app container takes one; a failed admission gives it back.
  ASSERT_TRUE(reservations.Begin("pod1", "app", kGpu));
  ReservedDevices app = For(kGpu);
  EXPECT_EQ(reservations.TakeReusable("pod1", 1, app), 1);
  EXPECT_EQ(app.ids, (std::vector<std::string>{"d0"}));
  EXPECT_EQ(app.from_reuse, app.ids);
  EXPECT_TRUE(app.new_ids.empty());
  EXPECT_EQ(reservations.Reusable("pod1", kGpu), (std::set<std::string>{"d1"}));
  reservations.Release("pod1", "app", app, app.from_reuse);
  EXPECT_EQ(reservations.Reusable("pod1", kGpu), (std::set<std::string>{"d0", "d1"}));

  // An app container's commit keeps what it took.
  ASSERT_TRUE(reservations.Begin("pod1", "app", kGpu));
  app = For(kGpu);
  EXPECT_EQ(reservations.TakeReusable("pod1", 5, app), 2);
  reservations.Commit("pod1", "app", app, /*reusable_by_pod=*/false);
  EXPECT_TRUE(reservations.Reusable("pod1", kGpu).empty());
}

TEST(ReservationsTest, PodsAreForgotten) {
  Reservations reservations;
  for (const char* pod : {"pod1", "pod2", "pod3"}) {
    ASSERT_TRUE(reservations.Begin(pod, "init", kGpu));
    ReservedDevices devices = For(kGpu);
    reservations.Reserve(std::string(pod) + "-d", devices);
    reservations.Commit(pod, "init", devices, /*reusable_by_pod=*/true);
  }
  reservations.ForgetPodsNotIn({"pod1", "pod3"});
  EXPECT_TRUE(reservations.Reusable("pod2", kGpu).empty());
  EXPECT_EQ(reservations.Reusable("pod3", kGpu), (std::set<std::string>{"pod3-d"}));
  EXPECT_EQ(reservations.Reusable("pod1", kGpu), (std::set<std::string>{"pod1-d"}));
  reservations.ForgetPod("pod1");
  EXPECT_TRUE(reservations.Reusable("pod1", kGpu).empty());
}

// What a rollback or a container already holding its devices says of reuse: added and taken
// away per pod and resource, an emptied entry dropped.
TEST(ReservationsTest, DevicesAreMadeReusableAndTakenOutOfReuse) {
  Reservations reservations;
  reservations.MakeReusable("pod1", kGpu, std::set<std::string>{"d0", "d1"});
  EXPECT_EQ(reservations.Reusable("pod1", kGpu), (std::set<std::string>{"d0", "d1"}));
  reservations.MakeReusable("pod1", kGpu, std::vector<std::string>{});
  reservations.Unreusable("pod1", kGpu, std::vector<std::string>{"d1", "d9"});
  EXPECT_EQ(reservations.Reusable("pod1", kGpu), (std::set<std::string>{"d0"}));
  reservations.Unreusable("pod1", kGpu, std::set<std::string>{"d0"});
  EXPECT_TRUE(reservations.Reusable("pod1", kGpu).empty());
  reservations.Unreusable("pod2", kGpu, std::vector<std::string>{"d0"});
  EXPECT_TRUE(reservations.Reusable("pod2", kGpu).empty());

  // An app container that took one from reuse and gave up gives it back.
  reservations.MakeReusable("pod1", kGpu, std::vector<std::string>{"d0"});
  ASSERT_TRUE(reservations.Begin("pod1", "app", kGpu));
  ReservedDevices app = For(kGpu);
  ASSERT_EQ(reservations.TakeReusable("pod1", 1, app), 1);
  EXPECT_TRUE(reservations.Reusable("pod1", kGpu).empty());
  reservations.Release("pod1", "app", app, app.from_reuse);
  EXPECT_EQ(reservations.Reusable("pod1", kGpu), (std::set<std::string>{"d0"}));

  // Only what the caller says the pod may still reuse goes back (its init container may have
  // let the device go meanwhile).
  ASSERT_TRUE(reservations.Begin("pod1", "app", kGpu));
  ReservedDevices again = For(kGpu);
  ASSERT_EQ(reservations.TakeReusable("pod1", 1, again), 1);
  reservations.Release("pod1", "app", again, {});
  EXPECT_TRUE(reservations.Reusable("pod1", kGpu).empty());
  EXPECT_TRUE(reservations.Begin("pod1", "app", kGpu)) << "no longer in flight";
}

// ---- Upstream's reservation scenarios of pod_devices_test.go ----
//
// Upstream keeps an admission's in-flight reservation inside podDevices; here it lives in
// Reservations beside PodDevices, and the steps below use the two as the manager's admission
// does (admission.cc): Begin and Reserve while picking, PodDevices::Insert followed by Commit
// once the plugin answered, Release when the admission gives up, PodDevices::Delete (with
// ForgetPodsNotIn) when pods are garbage collected.

// The devices an admission may still pick, as the manager computes them: healthy, held by no
// container and reserved by no admission in flight.
IdSet FreeDevices(const PodDevices& pod_devices, const Reservations& reservations,
                  const std::string& resource, const DeviceTable& table) {
  IdSet free = pod_devices.NotHeld(resource, table);
  reservations.EraseReserved(resource, free);
  return free;
}

DeviceTable TwoDevices(const std::string& first, const std::string& second) {
  return DeviceTable({Device{first, Health::kHealthy, {}}, Device{second, Health::kHealthy, {}}});
}

// What the admission commits for reserved devices without topology.
ContainerAllocation AllocationOf(const ReservedDevices& devices) {
  ContainerAllocation allocation;
  allocation.devices[checkpoint::kNoNumaNode] = devices.ids;
  return allocation;
}

TEST(ReservationsTest, TestPodDevicesReservationLifecycle) {
  const std::string pod = "pod";
  const std::string container = "container";
  const std::string committed_container = "committed-container";
  const std::string resource = "example.com/resource";
  const std::string committed_resource = "example.com/committed-resource";
  const DeviceTable table = TwoDevices("dev0", "dev1");

  PodDevices pod_devices;
  Reservations reservations;
  ASSERT_TRUE(reservations.Begin(pod, container, resource));
  EXPECT_FALSE(reservations.Begin(pod, container, resource))
      << "a second admission of the same container and resource must not start";
  ReservedDevices reserved = For(resource);
  reservations.Reserve("dev0", reserved);

  // Reserved: in use for every other admission, held by nobody.
  EXPECT_TRUE(reservations.IsReserved(resource, "dev0"));
  EXPECT_EQ(FreeDevices(pod_devices, reservations, resource, table), IdSet({"dev1"}));
  EXPECT_FALSE(pod_devices.HasPod(pod));
  EXPECT_EQ(pod_devices.FindDevices(pod, container, resource), nullptr);
  EXPECT_TRUE(pod_devices.ContainerDevices(pod, container).empty());
  EXPECT_FALSE(pod_devices.Response(pod, container, resource).has_value());
  EXPECT_TRUE(pod_devices.ToCheckpoint().empty()) << "a reservation is never checkpointed";
  EXPECT_FALSE(pod_devices.PodAndContainerForDevice(resource, "dev0").has_value());

  // Garbage collection of the pod removes what it holds, not the reservation in flight.
  pod_devices.Insert(pod, committed_container, committed_resource,
                     ContainerAllocation{{{checkpoint::kNoNumaNode, {"dev1"}}}, {}});
  EXPECT_TRUE(pod_devices.HasPod(pod));
  reservations.ForgetPodsNotIn({});
  pod_devices.Delete(pod_devices.PodsNotIn({}));
  EXPECT_FALSE(pod_devices.HasPod(pod));
  EXPECT_EQ(pod_devices.FindDevices(pod, committed_container, committed_resource), nullptr);
  EXPECT_TRUE(reservations.IsReserved(resource, "dev0")) << "the reservation survives collection";
  EXPECT_EQ(FreeDevices(pod_devices, reservations, resource, table), IdSet({"dev1"}));
  EXPECT_FALSE(reservations.Begin(pod, container, resource)) << "still in flight";

  // Commit: the container holds the device, which stays in use.
  pod_devices.Insert(pod, container, resource, AllocationOf(reserved));
  reservations.Commit(pod, container, reserved, /*reusable_by_pod=*/false);
  EXPECT_TRUE(pod_devices.HasPod(pod));
  const ResourceDevices held = pod_devices.ContainerDevices(pod, container);
  ASSERT_TRUE(held.contains(resource));
  EXPECT_EQ(held.at(resource).size(), 1u);
  EXPECT_TRUE(held.at(resource).contains("dev0"));
  EXPECT_FALSE(reservations.IsReserved(resource, "dev0")) << "held now, no longer reserved";
  EXPECT_EQ(FreeDevices(pod_devices, reservations, resource, table), IdSet({"dev1"}));
  EXPECT_EQ(pod_devices.ToCheckpoint().size(), 1u);

  // Releasing the committed allocation as if it were still a reservation changes nothing.
  reservations.Release(pod, container, reserved, reserved.from_reuse);
  EXPECT_TRUE(pod_devices.Holds(resource, "dev0"));
  EXPECT_EQ(FreeDevices(pod_devices, reservations, resource, table), IdSet({"dev1"}));

  // With nothing in flight, collecting the pod frees everything.
  pod_devices.Delete({pod});
  EXPECT_FALSE(pod_devices.HasPod(pod));
  EXPECT_FALSE(reservations.IsReserved(resource, "dev0"));
  EXPECT_EQ(FreeDevices(pod_devices, reservations, resource, table), IdSet({"dev0", "dev1"}));
}

TEST(ReservationsTest, TestPodDevicesRollbackReservation) {
  const std::string pod = "pod";
  const std::string container = "container";
  const std::string resource = "example.com/resource";
  const DeviceTable table = TwoDevices("dev0", "dev1");

  PodDevices pod_devices;
  Reservations reservations;
  ASSERT_TRUE(reservations.Begin(pod, container, resource));
  ReservedDevices reserved = For(resource);
  reservations.Reserve("dev0", reserved);
  ASSERT_EQ(FreeDevices(pod_devices, reservations, resource, table), IdSet({"dev1"}));

  reservations.Release(pod, container, reserved, reserved.from_reuse);
  EXPECT_FALSE(reservations.IsReserved(resource, "dev0"));
  EXPECT_EQ(FreeDevices(pod_devices, reservations, resource, table), IdSet({"dev0", "dev1"}));
  EXPECT_TRUE(pod_devices.empty());
  EXPECT_TRUE(pod_devices.DeviceIds().empty());
  EXPECT_TRUE(reservations.Reusable(pod, resource).empty());
  EXPECT_TRUE(reservations.Begin(pod, container, resource)) << "no longer in flight";
}

}  // namespace
}  // namespace devmgr::devicemanager
