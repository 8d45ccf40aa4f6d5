// DRAOptionalNodeOperations (KEP-5945) in the allocator: a ResourceSlice's skipNodeOperations is
// copied into the result of every device allocated from it, and without the gate the slice's
// devices are not allocated (another device may be), as upstream's allocator filters them.
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "structured/feature_gates.h"
#include "tests/structured/allocator_testing.h"

namespace devmgr::structured {
namespace {

using ::testing::ElementsAre;
using namespace devmgr::structured::test_inputs;  // NOLINT(build/namespaces)

// slice-skip (pool-0) holds device-1, whose slice skips every node operation; slice-plain
// (pool-1) device-2.
std::vector<kubeapi::ResourceSlicePtr> Slices() {
  kubeapi::ResourceSlicePtr skip = Slice("slice-skip", R"([{"name": "device-1"}])");
  auto with_skips = std::make_shared<kubeapi::ResourceSlice>(*skip);
  with_skips->spec.skip_node_operations = {"*"};
  with_skips->spec.pool.name = "pool-0";
  return {with_skips, Slice("slice-plain", R"([{"name": "device-2"}])")};
}

std::optional<std::vector<kubeapi::AllocationResult>> Allocate(
    const Features& features, const std::vector<kubeapi::ResourceSlicePtr>& slices, int count,
    Explanation* explanation = nullptr) {
  AllocatorOptions options;
  options.features = features;
  std::unique_ptr<Allocator> allocator =
      Allocator::Create(options, {}, {ClassOf("class-a", "driver-a")}, slices);
  const kubeapi::ResourceClaim claim = Claim(absl::StrCat(
      R"({"metadata": {"name": "claim-0", "namespace": "ns"}, "spec": {"devices": {"requests": [
      {"name": "req-0", "exactly": {"deviceClassName": "class-a", "count": )",
      count, "}}]}}}"));
  auto result = allocator->Allocate(Node1(), {&claim}, explanation);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.value_or(std::nullopt);
}

TEST(OptionalNodeOperationsTest, TheSlicesListGoesIntoEachResultWithTheGate) {
  Features features;
  features.optional_node_operations = true;
  auto result = Allocate(features, Slices(), 2);
  ASSERT_TRUE(result.has_value());
  const std::vector<kubeapi::DeviceRequestAllocationResult>& results = result->front().results;
  EXPECT_THAT(Picks(result->front()), ElementsAre("req-0=device-1", "req-0=device-2"));
  EXPECT_EQ(results[0].skip_node_operations, std::vector<std::string>{"*"});
  EXPECT_TRUE(results[1].skip_node_operations.empty());
  const nlohmann::json written = kubeapi::EncodeAllocationResult(result->front());
  EXPECT_EQ(written["devices"]["results"][0]["skipNodeOperations"], nlohmann::json({"*"}));
  EXPECT_FALSE(written["devices"]["results"][1].contains("skipNodeOperations"));
}

TEST(OptionalNodeOperationsTest, WithoutTheGateTheSlicesDevicesAreNotAllocated) {
  const Features features;
  EXPECT_FALSE(features.optional_node_operations) << "alpha in Kubernetes 1.37";
  auto one = Allocate(features, Slices(), 1);
  ASSERT_TRUE(one.has_value());
  EXPECT_THAT(Picks(one->front()), ElementsAre("req-0=device-2"));
  EXPECT_TRUE(one->front().results[0].skip_node_operations.empty());

  Explanation explanation;
  EXPECT_FALSE(Allocate(features, Slices(), 2, &explanation).has_value());
  ASSERT_EQ(explanation.claims.size(), 1u);
  ASSERT_EQ(explanation.claims[0].requests.size(), 1u);
  std::vector<std::string> reasons;
  for (const auto& device : explanation.claims[0].requests[0].devices) {
    reasons.push_back(device.reason);
  }
  EXPECT_THAT(reasons,
              ::testing::UnorderedElementsAre("its ResourceSlice skips node operations (the "
                                              "DRAOptionalNodeOperations feature is off)",
                                              ""));
}

TEST(OptionalNodeOperationsTest, TheGateIsNamedAsAKubeletFlagNamesIt) {
  absl::StatusOr<Features> features = ParseFeatureGates("DRAOptionalNodeOperations=true");
  ASSERT_TRUE(features.ok()) << features.status();
  EXPECT_TRUE(features->optional_node_operations);
}

}  // namespace
}  // namespace devmgr::structured
