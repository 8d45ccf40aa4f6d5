#include "deviceplugin/preferred_allocation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace devmgr::deviceplugin {
namespace {

using ::testing::ElementsAre;

DeviceMap FourOnTwoNodes() {
  DeviceMap devices;
  devices["a0"] = DeviceInfo{.numa_nodes = {0}};
  devices["a1"] = DeviceInfo{.numa_nodes = {0}};
  devices["b0"] = DeviceInfo{.numa_nodes = {1}};
  devices["b1"] = DeviceInfo{.numa_nodes = {1}};
  devices["b2"] = DeviceInfo{.numa_nodes = {1}};
  return devices;
}

v1beta1::ContainerPreferredAllocationRequest Request(std::vector<std::string> available,
                                                     std::vector<std::string> must, int size) {
  v1beta1::ContainerPreferredAllocationRequest request;
  for (auto& id : available) request.add_available_deviceids(id);
  for (auto& id : must) request.add_must_include_deviceids(id);
  request.set_allocation_size(size);
  return request;
}

TEST(PreferredAllocationTest, FollowsTheNodeOfMustInclude) {
  EXPECT_THAT(PreferNumaLocal(FourOnTwoNodes(), Request({"a1", "b0", "b1", "a0", "b2"}, {"a0"}, 2)),
              ElementsAre("a0", "a1"));
}

TEST(PreferredAllocationTest, StartsOnTheNodeOfferingMost) {
  EXPECT_THAT(PreferNumaLocal(FourOnTwoNodes(), Request({"a0", "a1", "b0", "b1", "b2"}, {}, 2)),
              ElementsAre("b0", "b1"));
}

TEST(PreferredAllocationTest, SpillsToOtherNodesWhenNeeded) {
  EXPECT_THAT(PreferNumaLocal(FourOnTwoNodes(), Request({"a0", "b0", "a1"}, {"b0"}, 3)),
              ElementsAre("b0", "a0", "a1"));
}

TEST(PreferredAllocationTest, NeverMoreThanTheSize) {
  EXPECT_TRUE(PreferNumaLocal(FourOnTwoNodes(), Request({"a0"}, {}, 0)).empty());
  EXPECT_EQ(PreferNumaLocal(FourOnTwoNodes(), Request({"a0", "a1", "x"}, {}, 2)).size(), 2u);
}

}  // namespace
}  // namespace devmgr::deviceplugin
