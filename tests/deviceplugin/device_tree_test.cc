#include "deviceplugin/device_tree.h"

#include <gtest/gtest.h>

namespace devmgr::deviceplugin {
namespace {

TEST(DeviceTreeTest, CountsPerTypeAndHealth) {
  DeviceTree tree;
  tree.AddDevice("gpu", "g0", DeviceInfo{});
  tree.AddDevice("gpu", "g1", DeviceInfo{.health = Health::kUnhealthy});
  tree.AddDevice("fpga", "f0", DeviceInfo{});
  EXPECT_EQ(tree.DeviceTypeCount("gpu"), 2u);
  EXPECT_EQ(tree.HealthyCount("gpu"), 1u);
  EXPECT_EQ(tree.DeviceTypeCount("fpga"), 1u);
  EXPECT_EQ(tree.DeviceTypeCount("none"), 0u);
  EXPECT_TRUE(tree.Devices("none").empty());
  EXPECT_EQ(tree.types().size(), 2u);
}

TEST(DeviceTreeTest, AddDeviceReplacesAndComparesByValue) {
  DeviceTree a;
  DeviceTree b;
  a.AddDevice("gpu", "g0", DeviceInfo{.numa_nodes = {0}});
  b.AddDevice("gpu", "g0", DeviceInfo{.numa_nodes = {1}});
  EXPECT_FALSE(a == b);
  b.AddDevice("gpu", "g0", DeviceInfo{.numa_nodes = {0}});
  EXPECT_TRUE(a == b);
  EXPECT_EQ(b.DeviceTypeCount("gpu"), 1u);
}

TEST(DeviceTreeTest, ReleaseTypesEmptiesTheTree) {
  DeviceTree tree;
  tree.AddDevice("gpu", "g0", DeviceInfo{});
  auto types = tree.ReleaseTypes();
  EXPECT_EQ(types.at("gpu").size(), 1u);
  EXPECT_TRUE(tree.types().empty());
}

// Every string a device sends must be UTF-8: its ID, node and mount paths, permissions, envs and
// annotations, keys and values.
TEST(DeviceTreeTest, ADeviceIsWireSafeWhenEveryStringIsUtf8) {
  const DeviceInfo good{.nodes = {{"/dev/caf\xc3\xa9", "/dev/x", "rw"}},
                        .mounts = {{"/opt", "/usr/opt", true}},
                        .envs = {{"K", "V"}},
                        .annotations = {{"a", "b"}}};
  EXPECT_TRUE(IsWireSafe("caf\xc3\xa9", good));
  EXPECT_FALSE(IsWireSafe("bad\xff", good));
  const std::string bad = "\xc3";
  for (int field = 0; field < 9; ++field) {
    DeviceInfo info = good;
    switch (field) {
      case 0:
        info.nodes[0].host_path = bad;
        break;
      case 1:
        info.nodes[0].container_path = bad;
        break;
      case 2:
        info.nodes[0].permissions = bad;
        break;
      case 3:
        info.mounts[0].host_path = bad;
        break;
      case 4:
        info.mounts[0].container_path = bad;
        break;
      case 5:
        info.envs = {{bad, "V"}};
        break;
      case 6:
        info.envs = {{"K", bad}};
        break;
      case 7:
        info.annotations = {{bad, "b"}};
        break;
      default:
        info.annotations = {{"a", bad}};
        break;
    }
    EXPECT_FALSE(IsWireSafe("id", info)) << field;
  }
}

TEST(DeviceTreeTest, HealthStrings) {
  EXPECT_EQ(HealthString(Health::kHealthy), "Healthy");
  EXPECT_EQ(HealthString(Health::kUnhealthy), "Unhealthy");
}

}  // namespace
}  // namespace devmgr::deviceplugin
