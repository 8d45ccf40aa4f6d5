// What the manager makes of one ListAndWatch snapshot, including what hostile plugins send.
#include "devicemanager/device_snapshot.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace devmgr::devicemanager {
namespace {

v1beta1::Device* AddDevice(v1beta1::ListAndWatchResponse& response, const std::string& id,
                           const std::string& health, std::vector<int64_t> nodes = {}) {
  v1beta1::Device* device = response.add_devices();
  device->set_id(id);
  device->set_health(health);
  if (!nodes.empty()) {
    for (int64_t node : nodes) device->mutable_topology()->add_nodes()->set_id(node);
  }
  return device;
}

DeviceSnapshot SnapshotOf(const v1beta1::ListAndWatchResponse& response) {
  return MakeDeviceSnapshot(DevicesFromWire(response));
}

TEST(DeviceSnapshotTest, SplitsByUpstreamsHealthRule) {
  v1beta1::ListAndWatchResponse response;
  AddDevice(response, "a", "Healthy", {0});
  AddDevice(response, "b", "Unhealthy", {1});
  AddDevice(response, "c", "healthy");
  AddDevice(response, "d", "");
  const DeviceSnapshot snapshot = SnapshotOf(response);
  EXPECT_EQ(snapshot.healthy, (std::set<std::string>{"a"}));
  EXPECT_EQ(snapshot.unhealthy, (std::set<std::string>{"b", "c", "d"}));
  ASSERT_EQ(snapshot.all.size(), 4U);
  EXPECT_EQ(snapshot.all.at("a"), (Device{"a", Health::kHealthy, {0}}));
  EXPECT_EQ(snapshot.all.at("b"), (Device{"b", Health::kUnhealthy, {1}}));
  EXPECT_EQ(snapshot.all.at("c").numa_nodes, std::vector<int64_t>());
}

// Found by the list_and_watch fuzzer: a device listed healthy and then unhealthy was in both
// health sets, so capacity counted it twice and it stayed allocatable although unhealthy.
TEST(DeviceSnapshotTest, RepeatedIdIsOneDeviceAsItsLastEntrySays) {
  v1beta1::ListAndWatchResponse response;
  AddDevice(response, "a", "Healthy", {0});
  AddDevice(response, "b", "Unhealthy");
  AddDevice(response, "a", "Unhealthy", {1});
  AddDevice(response, "b", "Healthy");
  const DeviceSnapshot snapshot = SnapshotOf(response);
  EXPECT_EQ(snapshot.healthy, (std::set<std::string>{"b"}));
  EXPECT_EQ(snapshot.unhealthy, (std::set<std::string>{"a"}));
  ASSERT_EQ(snapshot.all.size(), 2U);
  EXPECT_EQ(snapshot.all.at("a"), (Device{"a", Health::kUnhealthy, {1}}));
  EXPECT_EQ(snapshot.all.at("b"), (Device{"b", Health::kHealthy, {}}));
}

// Found by the list_and_watch fuzzer: a NUMA node listed twice for one device became two
// checkpoint entries for the device under that node.
TEST(DeviceSnapshotTest, RepeatedNumaNodeCountsOnceInFirstOrder) {
  v1beta1::ListAndWatchResponse response;
  AddDevice(response, "x", "Healthy", {1, 0, 1, 0, -1, -1});
  EXPECT_EQ(DevicesFromWire(response).at(0).numa_nodes, (std::vector<int64_t>{1, 0, -1}));
}

TEST(DeviceSnapshotTest, KeepsIdsByteForByte) {
  v1beta1::ListAndWatchResponse response;
  const std::string nul_inside("gpu\0one", 7);
  const std::string huge(1 << 20, 'x');
  AddDevice(response, nul_inside, "Healthy", {-1, INT64_MAX, INT64_MIN});
  AddDevice(response, huge, "Healthy");
  AddDevice(response, "", "Healthy");
  const DeviceSnapshot snapshot = SnapshotOf(response);
  EXPECT_EQ(snapshot.healthy, (std::set<std::string>{"", nul_inside, huge}));
  EXPECT_EQ(snapshot.all.at(nul_inside).numa_nodes,
            (std::vector<int64_t>{-1, INT64_MAX, INT64_MIN}));
}

TEST(DeviceSnapshotTest, AMillionDevicesHalfOfThemRepeated) {
  v1beta1::ListAndWatchResponse response;
  constexpr int kDevices = 1'000'000;
  for (int i = 0; i < kDevices; ++i) {
    // Every odd entry repeats the ID before it, unhealthy.
    const int id = i - i % 2;
    AddDevice(response, absl::StrCat("dev-", id), i % 2 == 0 ? "Healthy" : "Unhealthy");
  }
  const DeviceSnapshot snapshot = SnapshotOf(response);
  EXPECT_EQ(snapshot.all.size(), static_cast<size_t>(kDevices / 2));
  EXPECT_TRUE(snapshot.healthy.empty());
  EXPECT_EQ(snapshot.unhealthy.size(), static_cast<size_t>(kDevices / 2));
}

}  // namespace
}  // namespace devmgr::devicemanager
