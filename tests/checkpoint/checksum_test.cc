// The kubelet's checksum: the worked examples of wire-contract.md §D.3, and the go-spew text
// they are computed over.
#include "checkpoint/checksum.h"

#include <gtest/gtest.h>

namespace devmgr::checkpoint::internal {
namespace {

// The bytes of a ContainerAllocateResponse with envs {"A": "1"} (base64 "CgYKAUESATE=").
const std::string kAllocResp("\x0a\x06\x0a\x01\x41\x12\x01\x31", 8);

GoCheckpointData WorkedExample1() {
  GoCheckpointData data;
  GoPodDevicesEntry entry;
  entry.pod_uid = "pod1";
  entry.container_name = "con1";
  entry.resource_name = "example.com/gpu";
  entry.device_ids.emplace();
  (*entry.device_ids)[-1] = std::vector<std::string>{"dev9"};
  (*entry.device_ids)[0] = std::vector<std::string>{"dev1", "dev2"};
  (*entry.device_ids)[1] = std::vector<std::string>{"dev3"};
  entry.alloc_resp = kAllocResp;
  data.pod_device_entries.emplace().push_back(entry);
  data.registered_devices.emplace();
  (*data.registered_devices)["a.io/x"] = std::vector<std::string>{};
  (*data.registered_devices)["example.com/gpu"] =
      std::vector<std::string>{"dev1", "dev2", "dev3", "dev9"};
  return data;
}

TEST(ChecksumTest, Fnv1a32KnownVectors) {
  EXPECT_EQ(Fnv1a32(""), 2166136261U);
  EXPECT_EQ(Fnv1a32("a"), 0xe40c292cU);
  EXPECT_EQ(Fnv1a32("foobar"), 0xbf9cf968U);
}

TEST(ChecksumTest, WorkedExample1) {
  const GoCheckpointData data = WorkedExample1();
  EXPECT_EQ(SpewText(data),
            "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[{PodUID:("
            "string)pod1 ContainerName:(string)con1 ResourceName:(string)example.com/gpu "
            "DeviceIDs:(checkpoint.DevicesPerNUMA)map[-1:[dev9] 0:[dev1 dev2] 1:[dev3]] "
            "AllocResp:([]uint8)[10 6 10 1 65 18 1 49]}] RegisteredDevices:(map[string][]string)"
            "map[a.io/x:[] example.com/gpu:[dev1 dev2 dev3 dev9]]}");
  EXPECT_EQ(Checksum(data), 2549016347U);
}

TEST(ChecksumTest, WorkedExample2NothingAllocated) {
  GoCheckpointData data;
  data.registered_devices.emplace();
  EXPECT_EQ(SpewText(data),
            "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)<nil> "
            "RegisteredDevices:(map[string][]string)map[]}");
  EXPECT_EQ(Checksum(data), 3467439661U);
}

TEST(ChecksumTest, PreNumaV1Example) {
  GoCheckpointData data;
  data.layout = GoLayout::kV1;
  GoPodDevicesEntry entry;
  entry.pod_uid = "pod1";
  entry.container_name = "con1";
  entry.resource_name = "example.com/gpu";
  entry.device_ids_v1 = std::vector<std::string>{"dev1", "dev2"};
  entry.alloc_resp = kAllocResp;
  data.pod_device_entries.emplace().push_back(entry);
  data.registered_devices.emplace();
  (*data.registered_devices)["example.com/gpu"] = std::vector<std::string>{"dev1", "dev2"};
  EXPECT_EQ(SpewText(data),
            "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[{PodUID:("
            "string)pod1 ContainerName:(string)con1 ResourceName:(string)example.com/gpu "
            "DeviceIDs:([]string)[dev1 dev2] AllocResp:([]uint8)[10 6 10 1 65 18 1 49]}] "
            "RegisteredDevices:(map[string][]string)map[example.com/gpu:[dev1 dev2]]}");
  EXPECT_EQ(Checksum(data), 3547054426U);
}

TEST(ChecksumTest, NilAndEmptyDiffer) {
  GoCheckpointData data;
  GoPodDevicesEntry entry;  // DeviceIDs and AllocResp nil, strings empty
  data.pod_device_entries.emplace().push_back(entry);
  entry.device_ids.emplace()[0] = std::nullopt;
  entry.alloc_resp = "";
  data.pod_device_entries->push_back(entry);
  EXPECT_EQ(SpewText(data),
            "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[{PodUID:("
            "string) ContainerName:(string) ResourceName:(string) "
            "DeviceIDs:(checkpoint.DevicesPerNUMA)<nil> AllocResp:([]uint8)<nil>} {PodUID:(string) "
            "ContainerName:(string) ResourceName:(string) "
            "DeviceIDs:(checkpoint.DevicesPerNUMA)map[0:<nil>] AllocResp:([]uint8)[]}] "
            "RegisteredDevices:(map[string][]string)<nil>}");
}

TEST(ChecksumTest, NumaKeysSortNumericallyAndStringsAreRaw) {
  GoCheckpointData data;
  GoPodDevicesEntry entry;
  entry.pod_uid = "a b]";
  entry.device_ids.emplace();
  for (int64_t numa : {10, 2, -1, 1, 0}) (*entry.device_ids)[numa] = std::vector<std::string>{};
  data.pod_device_entries.emplace().push_back(entry);
  data.registered_devices.emplace();
  EXPECT_NE(SpewText(data).find("PodUID:(string)a b] "), std::string::npos);
  EXPECT_NE(SpewText(data).find("map[-1:[] 0:[] 1:[] 2:[] 10:[]]"), std::string::npos);
}

}  // namespace
}  // namespace devmgr::checkpoint::internal
