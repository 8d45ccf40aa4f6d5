// The generic plugin's GetPreferredAllocation for groups whose devices are shared (count > 1):
// a container asking for several shares gets shares of distinct devices while there are enough,
// after what the kubelet must include; groups of count 1 are left to the SDK's default.
#include "plugins/generic/share_spreader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace devmgr::plugins {
namespace {

GenericConfig Config() {
  GenericConfig config;
  GenericGroup shared;
  shared.name = "gpu";
  shared.count = 2;
  GenericGroup whole;
  whole.name = "serial";
  config.groups = {shared, whole};
  return config;
}

v1beta1::PreferredAllocationRequest Request(const std::vector<std::string>& available,
                                            const std::vector<std::string>& must_include,
                                            int size) {
  v1beta1::PreferredAllocationRequest request;
  v1beta1::ContainerPreferredAllocationRequest* container = request.add_container_requests();
  for (const std::string& id : available) container->add_available_deviceids(id);
  for (const std::string& id : must_include) container->add_must_include_deviceids(id);
  container->set_allocation_size(size);
  return request;
}

std::vector<std::string> Picked(ShareSpreader& spreader, const std::string& type,
                                const v1beta1::PreferredAllocationRequest& request) {
  deviceplugin::HookResult<v1beta1::PreferredAllocationResponse> result =
      spreader.GetPreferredAllocation(type, request);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok() || !result->has_value()) return {};
  EXPECT_EQ((*result)->container_responses_size(), request.container_requests_size());
  const auto& ids = (*result)->container_responses(0).deviceids();
  return {ids.begin(), ids.end()};
}

TEST(ShareSpreaderTest, SharesOfDistinctDevicesFirst) {
  ShareSpreader spreader(Config());
  ASSERT_TRUE(spreader.Shares());
  const std::vector<std::string> all = {"nvidia1-1", "nvidia0-1", "nvidia1-0", "nvidia0-0",
                                        "nvidia2-1"};
  EXPECT_EQ(Picked(spreader, "gpu", Request(all, {}, 2)),
            (std::vector<std::string>{"nvidia0-0", "nvidia1-0"}));
  EXPECT_EQ(Picked(spreader, "gpu", Request(all, {}, 3)),
            (std::vector<std::string>{"nvidia0-0", "nvidia1-0", "nvidia2-1"}));
  // More than there are devices: each device once, then the other shares.
  EXPECT_EQ(Picked(spreader, "gpu", Request(all, {}, 4)),
            (std::vector<std::string>{"nvidia0-0", "nvidia1-0", "nvidia2-1", "nvidia0-1"}));
  // What the kubelet must include comes first, and its device is taken.
  EXPECT_EQ(Picked(spreader, "gpu", Request(all, {"nvidia1-1"}, 2)),
            (std::vector<std::string>{"nvidia1-1", "nvidia0-0"}));
  // All of it, even beyond the size.
  EXPECT_EQ(Picked(spreader, "gpu", Request(all, {"nvidia1-1", "nvidia0-1"}, 1)),
            (std::vector<std::string>{"nvidia1-1", "nvidia0-1"}));
  // An ID with dashes of its own ("dri_by-path_x-0").
  EXPECT_EQ(Picked(spreader, "gpu", Request({"a-b-0", "a-b-1", "a-c-0"}, {}, 2)),
            (std::vector<std::string>{"a-b-0", "a-c-0"}));
}

// One share at a time goes to the least used device (the most free shares), so that the
// devices fill evenly rather than the first one first.
TEST(ShareSpreaderTest, OneShareGoesToTheLeastUsedDevice) {
  ShareSpreader spreader(Config());
  // nvidia0 has one share in use, nvidia1 none.
  EXPECT_EQ(Picked(spreader, "gpu", Request({"nvidia0-1", "nvidia1-0", "nvidia1-1"}, {}, 1)),
            std::vector<std::string>{"nvidia1-0"});
  // Both have one free: by ID.
  EXPECT_EQ(Picked(spreader, "gpu", Request({"nvidia1-1", "nvidia0-1"}, {}, 1)),
            std::vector<std::string>{"nvidia0-1"});
}

TEST(ShareSpreaderTest, GroupsThatDoNotShareGetTheDefault) {
  ShareSpreader spreader(Config());
  deviceplugin::HookResult<v1beta1::PreferredAllocationResponse> result =
      spreader.GetPreferredAllocation("serial", Request({"ttyUSB0", "ttyUSB1"}, {}, 1));
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(result->has_value());

  GenericConfig whole;
  whole.groups.emplace_back().name = "serial";
  EXPECT_FALSE(ShareSpreader(whole).Shares());
}

}  // namespace
}  // namespace devmgr::plugins
