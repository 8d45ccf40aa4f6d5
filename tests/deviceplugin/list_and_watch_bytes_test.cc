// ListAndWatchBytes against protobuf: the bytes written straight from a DeviceMap must be the
// bytes protobuf serializes for the message that map describes, for every shape a device takes
// (health, NUMA nodes including 0 and negative ones, an empty ID, lengths past one varint byte).
#include "deviceplugin/list_and_watch_bytes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace devmgr::deviceplugin {
namespace {

// The message the map describes, built the way protobuf's API builds it.
v1beta1::ListAndWatchResponse Message(const DeviceMap& devices) {
  v1beta1::ListAndWatchResponse message;
  for (const auto& [id, info] : devices) {
    v1beta1::Device* device = message.add_devices();
    device->set_id(id);
    device->set_health(std::string(HealthString(info.health)));
    for (int64_t node : info.numa_nodes) device->mutable_topology()->add_nodes()->set_id(node);
  }
  return message;
}

std::string Bytes(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

void ExpectProtobufsBytes(const DeviceMap& devices) {
  const std::string written = Bytes(ListAndWatchBytes(devices));
  EXPECT_EQ(written, Message(devices).SerializeAsString());
  v1beta1::ListAndWatchResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(written));
  EXPECT_EQ(parsed.devices_size(), static_cast<int>(devices.size()));
}

DeviceInfo Info(Health health, std::vector<int64_t> numa_nodes = {}) {
  DeviceInfo info;
  info.health = health;
  info.numa_nodes = std::move(numa_nodes);
  return info;
}

TEST(ListAndWatchBytesTest, NoDevicesIsTheEmptyMessage) {
  EXPECT_EQ(ListAndWatchBytes({}).Length(), 0u);
  ExpectProtobufsBytes({});
}

TEST(ListAndWatchBytesTest, HealthyAndUnhealthyDevices) {
  ExpectProtobufsBytes({{"gpu-0", Info(Health::kHealthy)}, {"gpu-1", Info(Health::kUnhealthy)}});
}

TEST(ListAndWatchBytesTest, NumaNodesIncludingZeroAndNegativeOnes) {
  ExpectProtobufsBytes({{"a", Info(Health::kHealthy, {0})},
                        {"b", Info(Health::kHealthy, {1, 0, 3})},
                        {"c", Info(Health::kUnhealthy, {-1})},
                        {"d", Info(Health::kHealthy, {int64_t{1} << 40, INT64_MAX, INT64_MIN})}});
}

TEST(ListAndWatchBytesTest, AnEmptyIdIsLeftOutAsProtobufLeavesItOut) {
  ExpectProtobufsBytes({{"", Info(Health::kHealthy, {2})}});
}

TEST(ListAndWatchBytesTest, LengthsPastOneVarintByte) {
  // A 300-byte ID: the ID's and the device's lengths each take two bytes; 40 NUMA nodes make the
  // topology's length two bytes too.
  std::vector<int64_t> nodes;
  for (int64_t node = 0; node < 40; ++node) nodes.push_back(node * 1000);
  ExpectProtobufsBytes({{std::string(300, 'x'), Info(Health::kHealthy, nodes)},
                        {std::string(20000, 'y'), Info(Health::kUnhealthy)}});
}

TEST(ListAndWatchBytesTest, ManyDevicesInIdOrder) {
  DeviceMap devices;
  for (int i = 0; i < 5000; ++i) {
    devices[absl::StrCat("dev-", i)] =
        Info(i % 7 == 0 ? Health::kUnhealthy : Health::kHealthy,
             i % 3 == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{i % 4});
  }
  ExpectProtobufsBytes(devices);
}

}  // namespace
}  // namespace devmgr::deviceplugin
