#include "devicemanager/reservations.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

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
  reservations.Release("pod1", "c", For(kGpu));
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

  reservations.Release("pod1", "c", devices);
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
  reservations.Release("pod1", "app", app);
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
  reservations.Release("pod1", "app", app);
  EXPECT_EQ(reservations.Reusable("pod1", kGpu), (std::set<std::string>{"d0"}));
}

}  // namespace
}  // namespace devmgr::devicemanager
