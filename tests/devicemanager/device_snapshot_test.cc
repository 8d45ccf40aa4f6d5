// What the manager makes of one ListAndWatch snapshot, including what hostile plugins send.
#include "devicemanager/device_snapshot.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "devicemanager/device_table.h"
#include "devicemanager/id_set.h"
#include "deviceplugin/v1beta1/api.pb.h"

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

// DeviceOf: the device `id` of the table; a missing one fails the test and matches nothing.
Device DeviceOf(const DeviceTable& table, const std::string& id) {
  const Device* device = table.Find(id);
  if (device == nullptr) {
    ADD_FAILURE() << "no device " << id;
    return Device{"<missing>", Health::kUnhealthy, {}};
  }
  return *device;
}

std::vector<Device> DevicesOf(const v1beta1::ListAndWatchResponse& response) {
  absl::StatusOr<std::vector<Device>> devices = DevicesFromWire(response.SerializeAsString());
  EXPECT_TRUE(devices.ok()) << devices.status();
  return devices.value_or(std::vector<Device>());
}

DeviceTable SnapshotOf(const v1beta1::ListAndWatchResponse& response) {
  return DeviceTable(DevicesOf(response));
}

std::vector<std::string> UnhealthyIds(const DeviceTable& table) {
  std::vector<std::string> ids;
  for (const Device& device : table) {
    if (device.health != Health::kHealthy) ids.push_back(device.id);
  }
  return ids;
}

using Ids = std::vector<std::string>;

TEST(DeviceSnapshotTest, SplitsByUpstreamsHealthRule) {
  v1beta1::ListAndWatchResponse response;
  AddDevice(response, "a", "Healthy", {0});
  AddDevice(response, "b", "Unhealthy", {1});
  AddDevice(response, "c", "healthy");
  AddDevice(response, "d", "");
  const DeviceTable table = SnapshotOf(response);
  EXPECT_EQ(table.HealthyIds(), (Ids{"a"}));
  EXPECT_EQ(UnhealthyIds(table), (Ids{"b", "c", "d"}));
  ASSERT_EQ(table.size(), 4U);
  EXPECT_EQ(DeviceOf(table, "a"), (Device{"a", Health::kHealthy, {0}}));
  EXPECT_EQ(DeviceOf(table, "b"), (Device{"b", Health::kUnhealthy, {1}}));
  EXPECT_EQ(DeviceOf(table, "c").numa_nodes, std::vector<int64_t>());
}

// Found by the list_and_watch fuzzer: a device listed healthy and then unhealthy was in both
// health sets, so capacity counted it twice and it stayed allocatable although unhealthy.
TEST(DeviceSnapshotTest, RepeatedIdIsOneDeviceAsItsLastEntrySays) {
  v1beta1::ListAndWatchResponse response;
  AddDevice(response, "a", "Healthy", {0});
  AddDevice(response, "b", "Unhealthy");
  AddDevice(response, "a", "Unhealthy", {1});
  AddDevice(response, "b", "Healthy");
  const DeviceTable table = SnapshotOf(response);
  EXPECT_EQ(table.HealthyIds(), (Ids{"b"}));
  EXPECT_EQ(UnhealthyIds(table), (Ids{"a"}));
  ASSERT_EQ(table.size(), 2U);
  EXPECT_EQ(DeviceOf(table, "a"), (Device{"a", Health::kUnhealthy, {1}}));
  EXPECT_EQ(DeviceOf(table, "b"), (Device{"b", Health::kHealthy, {}}));
}

// Found by the list_and_watch fuzzer: a NUMA node listed twice for one device became two
// checkpoint entries for the device under that node.
TEST(DeviceSnapshotTest, RepeatedNumaNodeCountsOnceInFirstOrder) {
  v1beta1::ListAndWatchResponse response;
  AddDevice(response, "x", "Healthy", {1, 0, 1, 0, -1, -1});
  EXPECT_EQ(DevicesOf(response).at(0).numa_nodes, (std::vector<int64_t>{1, 0, -1}));
  // A list too long to search in place goes through a set, with the same result.
  std::vector<int64_t> long_list;
  std::vector<int64_t> distinct;
  for (int64_t node = 0; node < 40; ++node) distinct.push_back(39 - node);
  for (int round = 0; round < 3; ++round) {
    long_list.insert(long_list.end(), distinct.begin(), distinct.end());
  }
  AddDevice(response, "y", "Healthy", long_list);
  EXPECT_EQ(DevicesOf(response).at(1).numa_nodes, distinct);
}

TEST(DeviceSnapshotTest, KeepsIdsByteForByte) {
  v1beta1::ListAndWatchResponse response;
  const std::string nul_inside("gpu\0one", 7);
  const std::string huge(1 << 20, 'x');
  AddDevice(response, nul_inside, "Healthy", {-1, INT64_MAX, INT64_MIN});
  AddDevice(response, huge, "Healthy");
  AddDevice(response, "", "Healthy");
  const DeviceTable table = SnapshotOf(response);
  EXPECT_EQ(table.HealthyIds(), (Ids{"", nul_inside, huge}));
  EXPECT_EQ(DeviceOf(table, nul_inside).numa_nodes,
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
  const DeviceTable table = SnapshotOf(response);
  EXPECT_EQ(table.size(), static_cast<size_t>(kDevices / 2));
  EXPECT_EQ(table.healthy_count(), 0U);
  EXPECT_TRUE(table.HealthyIds().empty());
  EXPECT_EQ(UnhealthyIds(table).size(), static_cast<size_t>(kDevices / 2));
}

// A plugin may list at most kMaxDevicesPerSnapshot devices in a snapshot: an empty device takes
// 2 bytes on the wire and far more in memory, so the message limit alone would let it make the
// manager hold gigabytes. Past the limit the snapshot is refused (and the stream ended).
TEST(DeviceSnapshotTest, MoreDevicesThanTheLimitAreRefused) {
  std::string bytes;
  for (size_t i = 0; i <= kMaxDevicesPerSnapshot; ++i) bytes.append("\x0a\x00", 2);
  absl::StatusOr<std::vector<Device>> devices = DevicesFromWire(bytes);
  EXPECT_EQ(devices.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(devices.status().message(), "a snapshot of 1048577 devices, over the limit of 1048576");
  bytes.resize(bytes.size() - 2);
  devices = DevicesFromWire(bytes);
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_EQ(devices->size(), kMaxDevicesPerSnapshot);
}

TEST(DeviceSnapshotTest, IdSetSortsAndErases) {
  IdSet ids({"c", "a", "b", "a"});
  EXPECT_EQ(ids.ids(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(ids.contains("b"));
  EXPECT_FALSE(ids.contains("bb"));
  // Ascending but with a repeat: not taken as it is.
  EXPECT_EQ(IdSet({"a", "b", "b", "c"}).ids(), (std::vector<std::string>{"a", "b", "c"}));
  IdSet erased({"a", "b", "c", "d"});
  erased.EraseAll({"0", "b", "d", "e"});
  EXPECT_EQ(erased, IdSet({"a", "c"}));
  erased.EraseAll({});
  EXPECT_EQ(erased, IdSet({"a", "c"}));
}

TEST(DeviceSnapshotTest, DeviceTableKeepsTheLastEntryOfAnIdAndFindsIt) {
  DeviceTable table({{"b", Health::kHealthy, {1}},
                     {"a", Health::kHealthy, {}},
                     {"c", Health::kUnhealthy, {}},
                     {"a", Health::kUnhealthy, {0}}});
  ASSERT_EQ(table.size(), 3U);
  EXPECT_EQ(table.begin()->id, "a");
  ASSERT_NE(table.Find("a"), nullptr);
  EXPECT_EQ(*table.Find("a"), (Device{"a", Health::kUnhealthy, {0}}));
  EXPECT_EQ(table.Find("bb"), nullptr);
  EXPECT_EQ(table.Find(""), nullptr);
  // Ascending but with a repeat: still the last entry.
  const DeviceTable repeated(
      {{"a", Health::kHealthy, {}}, {"a", Health::kUnhealthy, {}}, {"b", Health::kHealthy, {}}});
  ASSERT_EQ(repeated.size(), 2U);
  EXPECT_EQ(repeated.begin()->health, Health::kUnhealthy);
  EXPECT_EQ(repeated.healthy_count(), 1U);
  EXPECT_EQ(repeated.HealthyIds(), (std::vector<std::string>{"b"}));
  // The healthy devices are read from the table: counted, listed and looked up.
  EXPECT_EQ(table.healthy_count(), 1U);
  EXPECT_EQ(table.HealthyIds(), (std::vector<std::string>{"b"}));
  EXPECT_TRUE(table.IsHealthy("b"));
  EXPECT_FALSE(table.IsHealthy("a"));
  EXPECT_FALSE(table.IsHealthy("missing"));
  table.MarkAllUnhealthy();
  ASSERT_NE(table.Find("b"), nullptr);
  EXPECT_EQ(table.Find("b")->health, Health::kUnhealthy);
  EXPECT_EQ(table.healthy_count(), 0U);
  EXPECT_TRUE(table.HealthyIds().empty());
  EXPECT_FALSE(table.IsHealthy("b"));
}

}  // namespace
}  // namespace devmgr::devicemanager
