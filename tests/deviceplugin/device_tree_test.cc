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

TEST(DeviceTreeTest, HealthStrings) {
  EXPECT_EQ(HealthString(Health::kHealthy), "Healthy");
  EXPECT_EQ(HealthString(Health::kUnhealthy), "Unhealthy");
}

}  // namespace
}  // namespace devmgr::deviceplugin
