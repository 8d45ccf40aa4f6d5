// Upstream's TestLexicographicalAllocator (structured/internal/allocatortesting/
// lexicographical_testing.go in k8s.io/dynamic-resource-allocation at 3d03671, July 2026), case
// by case under its names: the allocator walks pools by name and a pool's slices by name,
// whatever order the slices come in; with DRADeviceBindingConditions on, pools whose devices
// have binding conditions come after the others, while within a pool the slices keep their
// order by name.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/structured/allocator_testing.h"

namespace devmgr::structured {
namespace {

using ::testing::ElementsAre;
using namespace devmgr::structured::test_inputs;  // NOLINT(build/namespaces)

// A slice of node-1 in driver-a's `pool` of `count` slices, holding `devices` (a JSON list).
kubeapi::ResourceSlicePtr PoolSlice(const std::string& name, const std::string& pool, int count,
                                    const std::string& devices) {
  const Json spec = {{"driver", "driver-a"},
                     {"nodeName", "node-1"},
                     {"pool", {{"name", pool}, {"generation", 1}, {"resourceSliceCount", count}}},
                     {"devices", Json::parse(devices)}};
  absl::StatusOr<kubeapi::ResourceSlice> slice =
      kubeapi::DecodeResourceSlice({{"metadata", {{"name", name}}}, {"spec", spec}});
  EXPECT_TRUE(slice.ok()) << slice.status();
  return std::make_shared<const kubeapi::ResourceSlice>(slice.value_or(kubeapi::ResourceSlice{}));
}

constexpr char kDevice1[] = R"([{"name": "device-1"}])";
constexpr char kDevice2[] = R"([{"name": "device-2"}])";
constexpr char kDevice3[] = R"([{"name": "device-3"}])";
constexpr char kDevice1WithBindingConditions[] =
    R"([{"name": "device-1", "bindingConditions": ["IsPrepare"],
         "bindingFailureConditions": ["BindingFailed"]}])";

// claim-0 asking for two devices of class-a; the allocation on node-1, each result as
// "pool/device" with its binding conditions after a '+'.
std::vector<std::string> AllocateTwo(const Features& features,
                                     const std::vector<kubeapi::ResourceSlicePtr>& slices) {
  const kubeapi::ResourceClaim claim = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {
    "devices": {"requests": [{"name": "req-0",
      "exactly": {"deviceClassName": "class-a", "count": 2}}]}}})");
  AllocatorOptions options;
  options.features = features;
  std::unique_ptr<Allocator> allocator =
      Allocator::Create(options, {}, {ClassOf("class-a", "driver-a")}, slices);
  auto result = allocator->Allocate(Node1(), {&claim}, nullptr);
  EXPECT_TRUE(result.ok()) << result.status();
  std::vector<std::string> picks;
  if (!result.ok() || !result->has_value()) return picks;
  for (const auto& item : (*result)->front().results) {
    std::string pick = absl::StrCat(item.request, "=", item.pool, "/", item.device);
    for (const std::string& condition : item.binding_conditions) {
      absl::StrAppend(&pick, "+", condition);
    }
    for (const std::string& condition : item.binding_failure_conditions) {
      absl::StrAppend(&pick, "!", condition);
    }
    picks.push_back(std::move(pick));
  }
  return picks;
}

TEST(LexicographicalAllocatorTest, LexicographicalSortingPools) {
  // pool-3 before pool-2 before pool-1 in input.
  EXPECT_THAT(AllocateTwo(Features{}, {PoolSlice("slice-1", "pool-3", 1, kDevice1),
                                       PoolSlice("slice-2", "pool-2", 1, kDevice1),
                                       PoolSlice("slice-3", "pool-1", 1, kDevice1)}),
              ElementsAre("req-0=pool-1/device-1", "req-0=pool-2/device-1"));
}

TEST(LexicographicalAllocatorTest, LexicographicalSortingPoolsWithBindingConditions) {
  Features features;
  features.device_binding_conditions = true;
  // Pools with binding conditions are considered after pools without them.
  EXPECT_THAT(
      AllocateTwo(features, {PoolSlice("slice-1", "pool-1", 1, kDevice1WithBindingConditions),
                             PoolSlice("slice-3", "pool-3", 1, kDevice3),
                             PoolSlice("slice-2", "pool-2", 1, kDevice2)}),
      ElementsAre("req-0=pool-2/device-2", "req-0=pool-3/device-3"));
}

TEST(LexicographicalAllocatorTest, LexicographicalSortingSlices) {
  // slice-3 before slice-2 before slice-1 in input.
  EXPECT_THAT(AllocateTwo(Features{}, {PoolSlice("slice-3", "pool-1", 3, kDevice3),
                                       PoolSlice("slice-2", "pool-1", 3, kDevice2),
                                       PoolSlice("slice-1", "pool-1", 3, kDevice1)}),
              ElementsAre("req-0=pool-1/device-1", "req-0=pool-1/device-2"));
}

TEST(LexicographicalAllocatorTest, LexicographicalSortingSlicesWithBindingConditions) {
  Features features;
  features.device_binding_conditions = true;
  // Within one pool the slices keep their order by name: the device with binding conditions
  // in slice-1 comes first, and its conditions are in its result.
  EXPECT_THAT(
      AllocateTwo(features, {PoolSlice("slice-1", "pool-1", 3, kDevice1WithBindingConditions),
                             PoolSlice("slice-3", "pool-1", 3, kDevice3),
                             PoolSlice("slice-2", "pool-1", 3, kDevice2)}),
      ElementsAre("req-0=pool-1/device-1+IsPrepare!BindingFailed", "req-0=pool-1/device-2"));
}

}  // namespace
}  // namespace devmgr::structured
