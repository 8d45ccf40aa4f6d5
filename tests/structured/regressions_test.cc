// The allocator where upstream's went wrong in 2026 (each test fails on the upstream code it
// names), the search's deadline and cancellation (upstream's "interrupt" subtests), the same
// answer whatever order the slices come in, the explanation of a failed allocation, the state
// that held claims leave, and which slices of counters a node's pools take.
#include <algorithm>
#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/structured/allocator_testing.h"

namespace devmgr::structured {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace devmgr::structured::test_inputs;  // NOLINT(build/namespaces)

std::optional<std::vector<kubeapi::AllocationResult>> AllocateOrDie(
    const Features& features, const std::vector<kubeapi::ResourceSlicePtr>& slices,
    const kubeapi::ResourceClaim& claim, Explanation* explanation = nullptr) {
  AllocatorOptions options;
  options.features = features;
  std::unique_ptr<Allocator> allocator =
      Allocator::Create(options, {}, {ClassOf("class-a", "driver-a")}, slices);
  auto result = allocator->Allocate(Node1(), {&claim}, explanation);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.value_or(std::nullopt);
}

// `slice` as one of a pool's two slices (devices in one, counters in the other).
kubeapi::ResourceSlicePtr OneOfTwo(const kubeapi::ResourceSlicePtr& slice) {
  auto copy = std::make_shared<kubeapi::ResourceSlice>(*slice);
  copy->spec.pool.resource_slice_count = 2;
  return copy;
}

// A claim holding a share of driver-a/pool-1/device-1, with no consumed capacity.
kubeapi::ResourceClaim HeldShareOfDevice1() {
  kubeapi::ResourceClaim held;
  kubeapi::DeviceRequestAllocationResult& share = held.allocation.emplace().results.emplace_back();
  share.request = "req-0";
  share.driver = "driver-a";
  share.pool = "pool-1";
  share.device = "device-1";
  share.share_id = "2b0e4ed6-5b8d-4f3c-9a8e-0c4a3a7e3b11";
  return held;
}

// kubernetes#140300: with list-type attributes, matchAttribute narrowed its intersection as
// devices joined and kept it narrowed when the search took one back, so a device sharing a
// value with those still in was refused. Here req-0 first takes device-1 [1,2] and device-2
// [2]; req-1's only device has [1], so device-2 is taken back and device-3 [1] must fit.
TEST(AllocatorRegressionTest, MatchAttributeOnListsForgetsABacktrackedDevice_140300) {
  Features features;
  features.list_type_attributes = true;
  const auto slice = Slice("slice-1", R"([
    {"name": "device-1", "attributes": {"numa": {"ints": [1, 2]}, "role": {"string": "a"}}},
    {"name": "device-2", "attributes": {"numa": {"ints": [2]}, "role": {"string": "a"}}},
    {"name": "device-3", "attributes": {"numa": {"ints": [1]}, "role": {"string": "a"}}},
    {"name": "device-4", "attributes": {"numa": {"ints": [1]}, "role": {"string": "b"}}}])");
  const auto claim = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {"devices": {
    "requests": [
      {"name": "req-0", "exactly": {"deviceClassName": "class-a", "count": 2, "selectors": [
        {"cel": {"expression": "device.attributes[\"driver-a\"].role == \"a\""}}]}},
      {"name": "req-1", "exactly": {"deviceClassName": "class-a", "selectors": [
        {"cel": {"expression": "device.attributes[\"driver-a\"].role == \"b\""}}]}}],
    "constraints": [{"matchAttribute": "driver-a/numa"}]}}})");
  auto result = AllocateOrDie(features, {slice}, claim);
  ASSERT_TRUE(result.has_value());
  EXPECT_THAT(Picks(result->front()),
              ElementsAre("req-0=device-1", "req-0=device-3", "req-1=device-4"));
}

// kubernetes#140438: distinctAttribute remembered one value per request, so the third device of
// a request was compared with the second only and could repeat the first's value.
TEST(AllocatorRegressionTest, DistinctAttributeComparesEveryDeviceOfARequest_140438) {
  const auto slice = Slice("slice-1", R"([
    {"name": "device-1", "attributes": {"numa": {"int": 0}}},
    {"name": "device-2", "attributes": {"numa": {"int": 1}}},
    {"name": "device-3", "attributes": {"numa": {"int": 0}}},
    {"name": "device-4", "attributes": {"numa": {"int": 2}}}])");
  const auto claim = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {"devices": {
    "requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a", "count": 3}}],
    "constraints": [{"distinctAttribute": "driver-a/numa"}]}}})");
  auto result = AllocateOrDie(Features{}, {slice}, claim);
  ASSERT_TRUE(result.has_value());
  EXPECT_THAT(Picks(result->front()),
              ElementsAre("req-0=device-1", "req-0=device-2", "req-0=device-4"));
}

// The same fault on the way back: taking back a device must free its value only.
TEST(AllocatorRegressionTest, DistinctAttributeFreesOnlyTheDeviceTakenBack) {
  const auto slice = Slice("slice-1", R"([
    {"name": "device-1", "attributes": {"numa": {"int": 0}, "role": {"string": "a"}}},
    {"name": "device-2", "attributes": {"numa": {"int": 1}, "role": {"string": "a"}}},
    {"name": "device-3", "attributes": {"numa": {"int": 0}, "role": {"string": "b"}}},
    {"name": "device-4", "attributes": {"numa": {"int": 2}, "role": {"string": "b"}}}])");
  // req-0 takes device-1 and device-2; req-1 may not repeat 0 or 1, so only device-4 fits.
  const auto claim = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {"devices": {
    "requests": [
      {"name": "req-0", "exactly": {"deviceClassName": "class-a", "count": 2, "selectors": [
        {"cel": {"expression": "device.attributes[\"driver-a\"].role == \"a\""}}]}},
      {"name": "req-1", "exactly": {"deviceClassName": "class-a", "selectors": [
        {"cel": {"expression": "device.attributes[\"driver-a\"].role == \"b\""}}]}}],
    "constraints": [{"distinctAttribute": "driver-a/numa"}]}}})");
  auto result = AllocateOrDie(Features{}, {slice}, claim);
  ASSERT_TRUE(result.has_value());
  EXPECT_THAT(Picks(result->front()),
              ElementsAre("req-0=device-1", "req-0=device-2", "req-1=device-4"));
}

// kubernetes#140436: a candidate's counters were taken before its taints and the claim's
// constraints were checked, and not given back when those refused it: the pool looked used up.
// Here device-1 is tainted; device-2 and device-3 together use all 8Gi.
TEST(AllocatorRegressionTest, CountersOfARefusedCandidateAreGivenBack_140436) {
  Features features;
  features.partitionable_devices = true;
  features.device_taints = true;
  const std::string consumes =
      R"("consumesCounters": [{"counterSet": "set-1", "counters": {"memory": {"value": "4Gi"}}}])";
  const auto devices = Slice("slice-1", R"([
    {"name": "device-1", "taints": [{"key": "k", "effect": "NoSchedule"}], )" +
                                            consumes + R"(},
    {"name": "device-2", )" + consumes + R"(},
    {"name": "device-3", )" + consumes + R"(}])");
  const auto counters =
      Slice("slice-0", "", R"([{"name": "set-1", "counters": {"memory": {"value": "8Gi"}}}])");
  const auto claim = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {"devices": {
    "requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a", "count": 2}}]}}})");
  auto result = AllocateOrDie(features, {OneOfTwo(devices), OneOfTwo(counters)}, claim);
  ASSERT_TRUE(result.has_value());
  EXPECT_THAT(Picks(result->front()), ElementsAre("req-0=device-2", "req-0=device-3"));
}

// The same with a constraint refusing the candidate after its counters were counted.
TEST(AllocatorRegressionTest, CountersOfACandidateAConstraintRefusesAreGivenBack_140436) {
  Features features;
  features.partitionable_devices = true;
  const std::string consumes =
      R"("consumesCounters": [{"counterSet": "set-1", "counters": {"memory": {"value": "4Gi"}}}])";
  const auto devices = Slice("slice-1", R"([
    {"name": "device-1", "attributes": {"numa": {"int": 0}}, )" +
                                            consumes + R"(},
    {"name": "device-2", "attributes": {"numa": {"int": 1}}, )" +
                                            consumes + R"(},
    {"name": "device-3", "attributes": {"numa": {"int": 1}}, )" +
                                            consumes + R"(}])");
  const auto counters =
      Slice("slice-0", "", R"([{"name": "set-1", "counters": {"memory": {"value": "8Gi"}}}])");
  // device-1 (numa 0) is taken first and backtracked; device-2 then device-3 must both fit.
  const auto claim = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {"devices": {
    "requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a", "count": 2}}],
    "constraints": [{"matchAttribute": "driver-a/numa"}]}}})");
  auto result = AllocateOrDie(features, {OneOfTwo(devices), OneOfTwo(counters)}, claim);
  ASSERT_TRUE(result.has_value());
  EXPECT_THAT(Picks(result->front()), ElementsAre("req-0=device-2", "req-0=device-3"));
}

// Two claims for shares of one device with consumable capacity, allocated together
// (DRAFractionalCapacityRange on unless told).
absl::StatusOr<std::optional<std::vector<kubeapi::AllocationResult>>> AllocateShares(
    const std::string& capacity, const std::string& first, const std::string& second,
    bool fractional_capacity_range = true) {
  Features features;
  features.consumable_capacity = true;
  features.fractional_capacity_range = fractional_capacity_range;
  const auto slice = Slice("slice-1", R"([{"name": "device-1", "allowMultipleAllocations": true,
      "capacity": )" + capacity + "}]");
  const auto request = [](const std::string& name, const std::string& amount) {
    return Claim(R"({"metadata": {"name": ")" + name + R"("}, "spec": {"devices": {"requests": [
        {"name": "req-0", "exactly": {"deviceClassName": "class-a",
         "capacity": {"requests": )" +
                 amount + "}}}]}}}");
  };
  const kubeapi::ResourceClaim claim0 = request("claim-0", first);
  const kubeapi::ResourceClaim claim1 = request("claim-1", second);
  AllocatorOptions options;
  options.features = features;
  std::unique_ptr<Allocator> allocator =
      Allocator::Create(options, {}, {ClassOf("class-a", "driver-a")}, {slice});
  return allocator->Allocate(Node1(), {&claim0, &claim1}, nullptr);
}

// kubernetes#140441: a request far past int64 on a capacity whose policy rounds up to a step was
// rounded in int64 arithmetic that overflowed (undefined behaviour here, a wrap in Go): bw 1e19
// of the device's 8 became a share of -9223372036854775804, and a second share of 4 still fit.
// Upstream's fix (kubernetes#140442) ends the allocation with an error instead. That is with
// DRAFractionalCapacityRange off; with it on the range counts in milli-units, where 1e19 is
// past int64 too, and upstream's error says so in those terms.
TEST(AllocatorRegressionTest, ACapacityRequestPastInt64IsAnError_140441) {
  const std::string capacity = R"({"bw": {"value": "8", "requestPolicy": {"default": "4",
      "validRange": {"min": "4", "step": "8"}}}})";
  auto result = AllocateShares(capacity, R"({"bw": "1e19"})", R"({"bw": "4"})",
                               /*fractional_capacity_range=*/false);
  ASSERT_FALSE(result.ok()) << "allocated: " << (result->has_value() ? "yes" : "no");
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(),
              HasSubstr("capacity \"bw\": capacity request cannot be represented in the "
                        "device's range arithmetic: request 10e18 exceeds MaxInt64"));
  result = AllocateShares(capacity, R"({"bw": "1e19"})", R"({"bw": "4"})");
  ASSERT_FALSE(result.ok()) << "allocated: " << (result->has_value() ? "yes" : "no");
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(),
              HasSubstr("capacity \"bw\": capacity request cannot be represented in the "
                        "device's range arithmetic: request 10e18 is not a representable "
                        "milli value"));
}

// kubernetes#140468: a negative request (cores -3) was counted as consumed and lowered the
// device's total, so a second claim got 7 of its 4 cores. Upstream refuses a negative amount
// and ends the allocation (kubernetes#140442).
TEST(AllocatorRegressionTest, ANegativeCapacityRequestIsAnError_140468) {
  auto result =
      AllocateShares(R"({"cores": {"value": "4"}})", R"({"cores": "-3"})", R"({"cores": "7"})");
  ASSERT_FALSE(result.ok()) << "allocated: " << (result->has_value() ? "yes" : "no");
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(),
              HasSubstr("capacity \"cores\": capacity value is negative"));
}

// kubernetes#140160: a range's step was counted in whole numbers (Quantity.Value(), rounded
// up), so with 500m..1500m in steps of 500m a request of 1500m was counted as 2, past the
// maximum, and 1200m as 2 as well: the device was never shared. With DRAFractionalCapacityRange
// (kubernetes#140161, on since 1.37) the range counts in milli-units: 1500m is taken as it is and
// 1200m rounds up to 1500m, two shares of the device's 4 cores.
const char kCoresInHalves[] = R"({"cores": {"value": "4", "requestPolicy": {"default": "500m",
    "validRange": {"min": "500m", "max": "1500m", "step": "500m"}}}})";

TEST(AllocatorRegressionTest, AFractionalRangeStepsInThousandths_140160) {
  auto result = AllocateShares(kCoresInHalves, R"({"cores": "1500m"})", R"({"cores": "1200m"})");
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->has_value()) << "1500m was counted as 2";
  ASSERT_EQ((*result)->size(), 2u);
  for (const kubeapi::AllocationResult& allocation : **result) {
    ASSERT_EQ(allocation.results.size(), 1u);
    const auto& consumed = allocation.results[0].consumed_capacity;
    ASSERT_EQ(consumed.count("cores"), 1u);
    EXPECT_EQ(consumed.at("cores").ToString(), "1500m");
  }
}

// With the gate off the whole-number count stays (upstream's, before and without the gate):
// 1500m does not fit, and 700m (500m and one step of 500m, 1 either way) takes 1.
TEST(AllocatorRegressionTest, AFractionalRangeStepsInWholeNumbersWithTheGateOff) {
  auto result = AllocateShares(kCoresInHalves, R"({"cores": "1500m"})", R"({"cores": "700m"})",
                               /*fractional_capacity_range=*/false);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->has_value());
  result = AllocateShares(kCoresInHalves, R"({"cores": "700m"})", R"({"cores": "700m"})",
                          /*fractional_capacity_range=*/false);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->has_value());
  for (const kubeapi::AllocationResult& allocation : **result) {
    EXPECT_EQ(allocation.results.at(0).consumed_capacity.at("cores").ToString(), "1");
  }
}

// A request finer than milli-units on a range counted in them cannot be rounded there; as
// upstream, that ends the allocation (upstream's TODO, kubernetes#141166, is to round it up).
TEST(AllocatorRegressionTest, ARequestFinerThanThousandthsOnAFractionalRangeIsAnError) {
  auto result = AllocateShares(kCoresInHalves, R"({"cores": "1.0000001"})", R"({"cores": "500m"})");
  ASSERT_FALSE(result.ok()) << "allocated: " << (result->has_value() ? "yes" : "no");
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(),
              HasSubstr("capacity \"cores\": capacity request cannot be represented in the "
                        "device's range arithmetic: request 1000000100n is not a "
                        "representable milli value"));
}

// A counter that devices allocated before have over-spent (set a: a-big holds 6 of its 4) leaves
// nothing for any device of the pool that consumes counters, whichever set it draws on: upstream's
// checkAvailableCounters compares every counter of the pool, a counter the candidate does not
// draw on counting as 0. Before, only the counters a candidate drew on were compared (and those
// a refused candidate had left at zero), so b-1 was given when it came before a-small and refused
// when it came after.
TEST(AllocatorRegressionTest, AnOverspentCounterLeavesNothingOfItsPoolInAnyOrder) {
  Features features;
  features.partitionable_devices = true;
  const auto consumes = [](const std::string& set, const std::string& amount) {
    return R"("consumesCounters": [{"counterSet": ")" + set +
           R"(", "counters": {"mem": {"value": ")" + amount + R"("}}}])";
  };
  const std::string a_big = R"({"name": "a-big", )" + consumes("a", "6") + "}";
  const std::string b_1 = R"({"name": "b-1", )" + consumes("b", "1") + "}";
  const std::string a_small = R"({"name": "a-small", )" + consumes("a", "1") + "}";
  const auto counters = Slice("slice-0", "", R"([
    {"name": "a", "counters": {"mem": {"value": "4"}}},
    {"name": "b", "counters": {"mem": {"value": "4"}}}])");
  const auto claim = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {"devices": {
    "requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a"}}]}}})");
  AllocatedState held;
  held.devices.insert(DeviceID{"driver-a", "pool-1", "a-big"});
  AllocatorOptions options;
  options.features = features;
  for (const std::string& order :
       {a_big + "," + b_1 + "," + a_small, a_big + "," + a_small + "," + b_1}) {
    SCOPED_TRACE(order);
    const auto devices = Slice("slice-1", "[" + order + "]");
    std::unique_ptr<Allocator> allocator = Allocator::Create(
        options, held, {ClassOf("class-a", "driver-a")}, {OneOfTwo(devices), OneOfTwo(counters)});
    auto result = allocator->Allocate(Node1(), {&claim}, nullptr);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_FALSE(result->has_value()) << "allocated " << Picks((*result)->front()).front();
  }
}

// With list-type attributes an empty list (zone: {strings: []}) has no value to compare:
// upstream's attributeAsSet gives none for it, so matchAttribute refuses such a device even as
// the first. Before, device-1 was taken.
TEST(AllocatorRegressionTest, MatchAttributeRefusesAnEmptyList) {
  Features features;
  features.list_type_attributes = true;
  const auto slice = Slice("slice-1", R"([
    {"name": "device-1", "attributes": {"zone": {"strings": []}}},
    {"name": "device-2", "attributes": {"zone": {"strings": ["a"]}}}])");
  const auto claim = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {"devices": {
    "requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a"}}],
    "constraints": [{"matchAttribute": "driver-a/zone"}]}}})");
  auto result = AllocateOrDie(features, {slice}, claim);
  ASSERT_TRUE(result.has_value());
  EXPECT_THAT(Picks(result->front()), ElementsAre("req-0=device-2"));
}

// The same for distinctAttribute: a device with an empty list is refused once another device is
// in. As the first it is taken (upstream takes any first device), and in it conflicts with
// nothing. Before, device-2 was taken after device-1.
TEST(AllocatorRegressionTest, DistinctAttributeRefusesAnEmptyListAfterTheFirstDevice) {
  Features features;
  features.list_type_attributes = true;
  const auto claim = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {"devices": {
    "requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a", "count": 2}}],
    "constraints": [{"distinctAttribute": "driver-a/zone"}]}}})");
  auto result = AllocateOrDie(features, {Slice("slice-1", R"([
    {"name": "device-1", "attributes": {"zone": {"strings": ["a"]}}},
    {"name": "device-2", "attributes": {"zone": {"strings": []}}},
    {"name": "device-3", "attributes": {"zone": {"strings": ["b"]}}}])")},
                              claim);
  ASSERT_TRUE(result.has_value());
  EXPECT_THAT(Picks(result->front()), ElementsAre("req-0=device-1", "req-0=device-3"));

  result = AllocateOrDie(features, {Slice("slice-1", R"([
    {"name": "device-1", "attributes": {"zone": {"strings": []}}},
    {"name": "device-2", "attributes": {"zone": {"strings": ["a"]}}}])")},
                         claim);
  ASSERT_TRUE(result.has_value());
  EXPECT_THAT(Picks(result->front()), ElementsAre("req-0=device-1", "req-0=device-2"));
}

// Upstream's "interrupt" subtests: six devices wanted of five; a search that runs out of time
// or is cancelled says so, one left alone finds there is no solution.
class InterruptTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::optional<std::vector<kubeapi::AllocationResult>>> Run(
      AllocatorOptions options) {
    slices_ = {Slice("slice-1", R"([{"name": "device-1"}, {"name": "device-2"},
        {"name": "device-3"}, {"name": "device-4"}, {"name": "device-5"}])")};
    claim_ = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {"devices": {"requests": [
        {"name": "req-0", "exactly": {"deviceClassName": "class-a", "count": 6}}]}}})");
    allocator_ = Allocator::Create(options, {}, {ClassOf("class-a", "driver-a")}, slices_);
    return allocator_->Allocate(Node1(), {&claim_});
  }

  std::vector<kubeapi::ResourceSlicePtr> slices_;
  kubeapi::ResourceClaim claim_;
  std::unique_ptr<Allocator> allocator_;
};

TEST_F(InterruptTest, Off) {
  auto result = Run({});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->has_value());
}

TEST_F(InterruptTest, Timeout) {
  AllocatorOptions options;
  options.timeout = absl::Nanoseconds(1);
  auto result = Run(options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(result.status().message(), "filter operation aborted: context deadline exceeded");
}

TEST_F(InterruptTest, Cancel) {
  std::atomic<bool> cancelled{true};
  AllocatorOptions options;
  options.cancelled = &cancelled;
  auto result = Run(options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(result.status().message(), "filter operation aborted: context canceled");
}

// A selector that the search's cancellation stops mid-evaluation keeps the code: the claim is
// not one that can never be allocated (InvalidArgument to the node's allocator). Before, every
// CEL failure came back as InvalidArgument.
TEST(InterruptedSelectorTest, KeepsTheCancellation) {
  std::vector<std::string> items;
  for (int i = 0; i < 300; ++i) items.push_back(absl::StrCat(i));
  const std::string expression = absl::StrCat("[", absl::StrJoin(items, ","), "].all(x, x >= 0)");
  const std::vector<kubeapi::ResourceSlicePtr> slices = {
      Slice("slice-1", R"([{"name": "device-1"}])")};
  const Json claim_json = Json::parse(R"({"metadata": {"name": "claim-0"},
      "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {
        "deviceClassName": "class-a", "allocationMode": "All"}}]}}})");
  Json with_selector = claim_json;
  with_selector["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = {
      {{"cel", {{"expression", expression}}}}};
  const kubeapi::ResourceClaim claim = Claim(with_selector.dump());
  std::atomic<bool> cancelled{true};
  AllocatorOptions options;
  options.cancelled = &cancelled;
  auto allocator = Allocator::Create(options, {}, {ClassOf("class-a", "driver-a")}, slices);
  auto result = allocator->Allocate(Node1(), {&claim});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled) << result.status();
  EXPECT_THAT(result.status().message(), HasSubstr("selector #0 on device driver-a/"))
      << result.status();
}

// A held result with a share ID is a share of its device only while consumable capacity is on;
// with the gate off the scheduler counts the device as held whole (foreachAllocatedDevice), so
// a new claim cannot take it. Before, it was a share whatever the gates, and the device was
// handed out a second time.
TEST(AllocatedStateTest, AShareIsHeldWholeWithConsumableCapacityOff) {
  const kubeapi::ResourceClaim held = HeldShareOfDevice1();
  const DeviceID device{"driver-a", "pool-1", "device-1"};
  const auto slice =
      Slice("slice-1", R"([{"name": "device-1", "allowMultipleAllocations": true}])");
  const auto claim = Claim(R"({"metadata": {"name": "claim-1"}, "spec": {"devices": {
    "requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a"}}]}}})");
  for (const bool consumable : {false, true}) {
    SCOPED_TRACE(consumable ? "consumable capacity on" : "consumable capacity off");
    Features features;
    features.consumable_capacity = consumable;
    AllocatedState state = AllocatedStateOf({held}, features);
    EXPECT_EQ(state.devices.contains(device), !consumable);
    EXPECT_EQ(state.shared.size(), consumable ? 1u : 0u);
    AllocatorOptions options;
    options.features = features;
    std::unique_ptr<Allocator> allocator =
        Allocator::Create(options, std::move(state), {ClassOf("class-a", "driver-a")}, {slice});
    auto result = allocator->Allocate(Node1(), {&claim}, nullptr);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->has_value(), consumable) << "the device is shared only with the gate on";
  }
}

// kubernetes#140433: a held share of an allow-multiple device without consumed capacity (a
// result with a share ID and no consumedCapacity) has spent the device's counters already; a
// new share of it must not be charged them again. device-1 takes 3 of the set's 4: charged
// twice, the pool looks used up and the claim gets nothing.
TEST(AllocatorRegressionTest, AHeldShareWithoutCapacityIsNotChargedTwice_140433) {
  Features features;
  features.partitionable_devices = true;
  features.consumable_capacity = true;
  const kubeapi::ResourceClaim held = HeldShareOfDevice1();
  const auto devices = Slice("slice-1", R"([{"name": "device-1", "allowMultipleAllocations": true,
      "consumesCounters": [{"counterSet": "set-1", "counters": {"memory": {"value": "3"}}}]}])");
  const auto counters =
      Slice("slice-0", "", R"([{"name": "set-1", "counters": {"memory": {"value": "4"}}}])");
  const auto claim = Claim(R"({"metadata": {"name": "claim-1"}, "spec": {"devices": {
    "requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a"}}]}}})");
  AllocatorOptions options;
  options.features = features;
  options.new_share_id = [] { return std::string("9d5b2c1e-0f4a-4e7b-8c3d-6a1f2e3d4c5b"); };
  std::unique_ptr<Allocator> allocator =
      Allocator::Create(options, AllocatedStateOf({held}, features),
                        {ClassOf("class-a", "driver-a")}, {OneOfTwo(devices), OneOfTwo(counters)});
  auto result = allocator->Allocate(Node1(), {&claim}, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->has_value()) << "the device's counters were charged a second time";
  EXPECT_THAT(Picks((*result)->front()), ElementsAre("req-0=device-1"));
}

// A share this search gave out without consuming capacity keeps the device's counters spent
// when another share of it is taken back. claim-0 takes a share of device-1 (charged 3 of the
// set's 4); claim-1's req-0 takes a second share, which its constraint refuses, and then
// device-2; claim-2 takes a third share, charged nothing. Before, taking the second share back
// forgot the first (the shares were counted by the capacity they consumed, none), so the third
// was charged again, found the pool used up, and nothing was allocated.
TEST(AllocatorRegressionTest, ASharedDeviceStaysChargedOnceWhenOneOfItsSharesIsTakenBack) {
  Features features;
  features.partitionable_devices = true;
  features.consumable_capacity = true;
  const auto devices = Slice("slice-1", R"([
    {"name": "device-1", "allowMultipleAllocations": true,
     "attributes": {"role": {"string": "a"}, "model": {"string": "m1"}},
     "consumesCounters": [{"counterSet": "set-1", "counters": {"memory": {"value": "3"}}}]},
    {"name": "device-2", "attributes": {"role": {"string": "a"}, "model": {"string": "m2"}}},
    {"name": "device-3", "attributes": {"role": {"string": "b"}, "model": {"string": "m2"}}}])");
  const auto counters =
      Slice("slice-0", "", R"([{"name": "set-1", "counters": {"memory": {"value": "4"}}}])");
  const std::string m1 =
      R"({"cel": {"expression": "device.attributes[\"driver-a\"].model == \"m1\""}})";
  const auto claim0 = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {"devices": {
    "requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a", "selectors": [)" +
                            m1 + "]}}]}}}");
  const auto claim1 = Claim(R"({"metadata": {"name": "claim-1"}, "spec": {"devices": {
    "requests": [
      {"name": "req-0", "exactly": {"deviceClassName": "class-a", "selectors": [
        {"cel": {"expression": "device.attributes[\"driver-a\"].role == \"a\""}}]}},
      {"name": "req-1", "exactly": {"deviceClassName": "class-a", "selectors": [
        {"cel": {"expression": "device.attributes[\"driver-a\"].role == \"b\""}}]}}],
    "constraints": [{"matchAttribute": "driver-a/model"}]}}})");
  const auto claim2 = Claim(R"({"metadata": {"name": "claim-2"}, "spec": {"devices": {
    "requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a", "selectors": [)" +
                            m1 + "]}}]}}}");
  AllocatorOptions options;
  options.features = features;
  std::unique_ptr<Allocator> allocator = Allocator::Create(
      options, {}, {ClassOf("class-a", "driver-a")}, {OneOfTwo(devices), OneOfTwo(counters)});
  auto result = allocator->Allocate(Node1(), {&claim0, &claim1, &claim2}, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->has_value()) << "the device's counters were charged a second time";
  ASSERT_EQ((*result)->size(), 3u);
  EXPECT_THAT(Picks((**result)[0]), ElementsAre("req-0=device-1"));
  EXPECT_THAT(Picks((**result)[1]), ElementsAre("req-0=device-2", "req-1=device-3"));
  EXPECT_THAT(Picks((**result)[2]), ElementsAre("req-0=device-1"));
}

// kubernetes#140797: a device another claim holds a share of is not given whole to a new claim
// once its slice no longer allows shares (allowMultipleAllocations turned off).
TEST(AllocatorRegressionTest, ADeviceWithAHeldShareIsNotGivenWhole_140797) {
  Features features;
  features.consumable_capacity = true;
  const kubeapi::ResourceClaim held = HeldShareOfDevice1();
  const auto slice = Slice("slice-1", R"([{"name": "device-1"}, {"name": "device-2"}])");
  const auto claim = Claim(R"({"metadata": {"name": "claim-1"}, "spec": {"devices": {
    "requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a"}}]}}})");
  AllocatorOptions options;
  options.features = features;
  std::unique_ptr<Allocator> allocator = Allocator::Create(
      options, AllocatedStateOf({held}, features), {ClassOf("class-a", "driver-a")}, {slice});
  Explanation explanation;
  auto result = allocator->Allocate(Node1(), {&claim}, &explanation);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->has_value());
  EXPECT_THAT(Picks((*result)->front()), ElementsAre("req-0=device-2"));
  // --explain says why device-1 is no candidate.
  ASSERT_EQ(explanation.claims.size(), 1u);
  ASSERT_EQ(explanation.claims[0].requests.size(), 1u);
  const std::vector<DeviceVerdict>& verdicts = explanation.claims[0].requests[0].devices;
  ASSERT_EQ(verdicts.size(), 2u);
  EXPECT_EQ(verdicts[0].reason, "another claim holds a share of it, and it is not shared any more");
  EXPECT_EQ(verdicts[1].reason, "");
}

// A slice of shared counters for another node, at a generation the pool's node slices have not
// reached yet. Upstream's stable allocator (only stable gates on) takes counter slices for every
// node, so the newer generation hides node-1's slice and allocationMode All finds the pool being
// updated; its incubating and experimental allocators (a newer gate on, here consumable
// capacity) select counter slices by node, so node-1's complete pool is used. Before, devmgr
// took the stable rule whatever the gates.
TEST(AllocatorPoolsTest, CounterSlicesAreSelectedByNodeUnlessOnlyStableGatesAreOn) {
  const auto slice = [](const std::string& name, const std::string& node, int generation, int count,
                        Json extra) {
    Json spec = {
        {"driver", "driver-a"},
        {"nodeName", node},
        {"pool", {{"name", "pool-1"}, {"generation", generation}, {"resourceSliceCount", count}}}};
    spec.update(extra);
    absl::StatusOr<kubeapi::ResourceSlice> decoded =
        kubeapi::DecodeResourceSlice({{"metadata", {{"name", name}}}, {"spec", spec}});
    EXPECT_TRUE(decoded.ok()) << decoded.status();
    return std::make_shared<const kubeapi::ResourceSlice>(
        decoded.value_or(kubeapi::ResourceSlice{}));
  };
  const std::vector<kubeapi::ResourceSlicePtr> slices = {
      slice("devices", "node-1", 1, 1, {{"devices", Json::parse(R"([{"name": "device-1"}])")}}),
      slice("counters", "node-2", 2, 2,
            {{"sharedCounters",
              Json::parse(R"([{"name": "set-1", "counters": {"memory": {"value": "8Gi"}}}])")}})};
  const auto claim = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {"devices": {
    "requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a",
                                              "allocationMode": "All"}}]}}})");
  // The same pool complete at one generation, its counters in a slice for node-2: node-1's
  // device draws on them under either rule (the counter slice is read from the whole pool).
  const std::vector<kubeapi::ResourceSlicePtr> complete = {
      slice("devices", "node-1", 1, 2, {{"devices", Json::parse(R"([{"name": "device-1",
        "consumesCounters": [{"counterSet": "set-1", "counters": {"memory": {"value": "4Gi"}}}]}])")}}),
      slice("counters", "node-2", 1, 2,
            {{"sharedCounters",
              Json::parse(R"([{"name": "set-1", "counters": {"memory": {"value": "8Gi"}}}])")}})};
  // The same with counters that cannot be read: the pool is invalid under either rule.
  const auto one = Claim(R"({"metadata": {"name": "claim-1"}, "spec": {"devices": {
    "requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a"}}]}}})");
  std::vector<kubeapi::ResourceSlicePtr> broken = complete;
  broken[1] =
      slice("counters", "node-2", 1, 2,
            {{"sharedCounters",
              Json::parse(R"([{"name": "set-1", "counters": {"memory": {"value": "lots"}}}])")}});
  for (const bool stable_only : {true, false}) {
    SCOPED_TRACE(stable_only ? "stable gates only" : "consumable capacity on");
    Features features;
    features.partitionable_devices = true;
    features.consumable_capacity = !stable_only;
    AllocatorOptions options;
    options.features = features;
    std::unique_ptr<Allocator> allocator =
        Allocator::Create(options, {}, {ClassOf("class-a", "driver-a")}, slices);
    auto result = allocator->Allocate(Node1(), {&claim}, nullptr);
    if (stable_only) {
      ASSERT_FALSE(result.ok());
      EXPECT_THAT(result.status().message(), HasSubstr("is currently being updated"));
    } else {
      ASSERT_TRUE(result.ok()) << result.status();
      ASSERT_TRUE(result->has_value());
      EXPECT_THAT(Picks(result->value().front()), ElementsAre("req-0=device-1"));
    }
    std::unique_ptr<Allocator> whole =
        Allocator::Create(options, {}, {ClassOf("class-a", "driver-a")}, complete);
    auto drawn = whole->Allocate(Node1(), {&claim}, nullptr);
    ASSERT_TRUE(drawn.ok()) << drawn.status();
    ASSERT_TRUE(drawn->has_value());
    EXPECT_THAT(Picks(drawn->value().front()), ElementsAre("req-0=device-1"));
    std::unique_ptr<Allocator> invalid =
        Allocator::Create(options, {}, {ClassOf("class-a", "driver-a")}, broken);
    Explanation why;
    auto refused = invalid->Allocate(Node1(), {&one}, &why);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().message(), "invalid resource pools were encountered");
    // For the reason the slice could not be read, not for a counter set it then lacks.
    EXPECT_THAT(why.pools, ElementsAre(HasSubstr("ResourceSlice counters: ")));
  }
}

// A slice read without the API server's checks (`devmgr dra allocate`, a store fed directly)
// whose device both reaches every node and carries a selector that is no NodeSelector: the
// allocation fails with the selector's fault. Before, merging the result's node selector read
// the selector's parts as objects and the process ended on nlohmann's type_error.
TEST(AllocatorRegressionTest, AMalformedSelectorOfADeviceForEveryNodeIsAnError) {
  Features features;
  features.partitionable_devices = true;
  absl::StatusOr<kubeapi::ResourceSlice> decoded = kubeapi::DecodeResourceSlice(Json::parse(R"({
    "metadata": {"name": "slice-1"},
    "spec": {"driver": "driver-a", "perDeviceNodeSelection": true,
             "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 1},
             "devices": [{"name": "device-1", "allNodes": true,
                          "nodeSelector": {"nodeSelectorTerms": ["x"]}}]}})"));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const auto slice = std::make_shared<const kubeapi::ResourceSlice>(*std::move(decoded));
  const auto claim = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {"devices": {
    "requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a"}}]}}})");
  AllocatorOptions options;
  options.features = features;
  std::unique_ptr<Allocator> allocator =
      Allocator::Create(options, {}, {ClassOf("class-a", "driver-a")}, {slice});
  auto result = allocator->Allocate(Node1(), {&claim}, nullptr);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(),
              HasSubstr("node selector of device driver-a/pool-1/device-1: nodeSelectorTerms[0]"));
}

// Counts far beyond the claim's limit of 32 devices: in a subrequest, passed over for the next
// one; in a request, the claim's limit error, with the real sum. Before, a count over 2^31 - 1
// failed the whole claim with an error of devmgr's own, and sums wrapped around in 32 bits: a
// claim asking for 2^31 devices in all passed the limit check and searched, and with one device
// taken a subrequest of 2^31 - 1 devices passed the per-claim check and enumerated subsets of 39
// devices until the search's deadline.
TEST(AllocatorRegressionTest, HugeCountsMeetTheClaimLimitWithoutWrappingAround) {
  std::string devices = "[";
  for (int i = 0; i < 40; ++i) {
    absl::StrAppend(&devices, i == 0 ? "" : ",", R"({"name": "device-)", i, R"("})");
  }
  devices += "]";
  const auto slice = Slice("slice-1", devices);
  const auto first_available = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {"devices": {
    "requests": [
      {"name": "a", "exactly": {"deviceClassName": "class-a"}},
      {"name": "b", "firstAvailable": [
        {"name": "big", "deviceClassName": "class-a", "count": 2147483647},
        {"name": "huge", "deviceClassName": "class-a", "count": 4294967296},
        {"name": "small", "deviceClassName": "class-a"}]}]}}})");
  Features features;
  features.prioritized_list = true;
  auto result = AllocateOrDie(features, {slice}, first_available);
  ASSERT_TRUE(result.has_value());
  EXPECT_THAT(Picks(result->front()), ElementsAre("a=device-0", "b/small=device-1"));

  const auto too_many = Claim(R"({"metadata": {"name": "claim-1"}, "spec": {"devices": {
    "requests": [
      {"name": "a", "exactly": {"deviceClassName": "class-a", "count": 2147483647}},
      {"name": "b", "exactly": {"deviceClassName": "class-a"}}]}}})");
  AllocatorOptions options;
  std::unique_ptr<Allocator> allocator =
      Allocator::Create(options, {}, {ClassOf("class-a", "driver-a")}, {slice});
  auto refused = allocator->Allocate(Node1(), {&too_many}, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "claim claim-1: number of requested devices 2147483648 exceeds the claim limit of 32");
}

// A negative count, which validation refuses, in a claim that was not validated (a file given to
// `devmgr dra allocate`): summed as upstream's allocator sums it, its request asks for nothing.
// Before, the sum after it overflowed int64 (undefined behaviour; a crash under UBSan).
TEST(AllocatorRegressionTest, ANegativeCountAsksForNothingAndOverflowsNoSum) {
  const auto slice = Slice("slice-1", R"([{"name": "device-0"}, {"name": "device-1"}])");
  const auto claim = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {"devices": {
    "requests": [
      {"name": "a", "exactly": {"deviceClassName": "class-a", "count": -9223372036854775808}},
      {"name": "b", "exactly": {"deviceClassName": "class-a", "count": -1}},
      {"name": "c", "exactly": {"deviceClassName": "class-a"}}]}}})");
  auto result = AllocateOrDie(Features{}, {slice}, claim);
  ASSERT_TRUE(result.has_value());
  EXPECT_THAT(Picks(result->front()), ElementsAre("c=device-0"));
}

// The order slices come in changes nothing: pools and slices are searched by name.
TEST(AllocatorDeterminismTest, SliceOrderDoesNotChangeTheResult) {
  auto slice = [](const std::string& name, const std::string& pool, const std::string& device) {
    Json object = {{"metadata", {{"name", name}}},
                   {"spec",
                    {{"driver", "driver-a"},
                     {"nodeName", "node-1"},
                     {"pool", {{"name", pool}, {"generation", 1}, {"resourceSliceCount", 2}}},
                     {"devices", Json::array({{{"name", device}}})}}}};
    return std::make_shared<const kubeapi::ResourceSlice>(*kubeapi::DecodeResourceSlice(object));
  };
  std::vector<kubeapi::ResourceSlicePtr> slices = {
      slice("b-1", "pool-b", "dev-b1"), slice("a-2", "pool-a", "dev-a2"),
      slice("b-0", "pool-b", "dev-b0"), slice("a-1", "pool-a", "dev-a1")};
  const auto claim = Claim(R"({"metadata": {"name": "claim-0"}, "spec": {"devices": {"requests": [
      {"name": "req-0", "exactly": {"deviceClassName": "class-a", "count": 3}}]}}})");
  std::sort(slices.begin(), slices.end());
  std::optional<std::vector<std::string>> first;
  do {
    auto result = AllocateOrDie(Features{}, slices, claim);
    ASSERT_TRUE(result.has_value());
    const std::vector<std::string> picks = Picks(result->front());
    if (!first.has_value()) first = picks;
    EXPECT_EQ(picks, *first);
  } while (std::next_permutation(slices.begin(), slices.end()));
  EXPECT_THAT(*first, ElementsAre("req-0=dev-a1", "req-0=dev-a2", "req-0=dev-b0"));
}

// What --explain prints: each device's verdict for each request, and the constraint that kept
// refusing devices.
TEST(AllocatorExplanationTest, SaysWhyEachDeviceIsNotACandidate) {
  Features features;
  features.device_taints = true;
  const auto slice = Slice("slice-1", R"([
    {"name": "device-1", "attributes": {"numa": {"int": 0}, "model": {"string": "a100"}}},
    {"name": "device-2", "attributes": {"numa": {"int": 1}, "model": {"string": "t4"}}},
    {"name": "device-3", "attributes": {"numa": {"int": 1}, "model": {"string": "a100"}},
     "taints": [{"key": "broken", "value": "yes", "effect": "NoSchedule"}]},
    {"name": "device-4", "attributes": {"numa": {"int": 1}, "model": {"string": "a100"}}}])");
  const auto claim = Claim(R"({"metadata": {"name": "claim-0", "namespace": "ns"}, "spec": {
    "devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "class-a",
      "count": 3, "selectors": [{"cel": {"expression": "device.attributes[\"driver-a\"].model == \"a100\""}}]}}],
    "constraints": [{"matchAttribute": "driver-a/numa"}]}}})");
  Explanation explanation;
  auto result = AllocateOrDie(features, {slice}, claim, &explanation);
  EXPECT_FALSE(result.has_value());
  EXPECT_FALSE(explanation.allocated);
  ASSERT_EQ(explanation.claims.size(), 1u);
  const ClaimExplanation& out = explanation.claims[0];
  EXPECT_EQ(out.claim, "ns/claim-0");
  ASSERT_EQ(out.requests.size(), 1u);
  EXPECT_EQ(out.requests[0].wants, "3 devices");
  ASSERT_EQ(out.requests[0].devices.size(), 4u);
  EXPECT_EQ(out.requests[0].devices[0].reason, "");
  EXPECT_THAT(out.requests[0].devices[1].reason,
              HasSubstr("request selector #0 is false: device.attributes[\"driver-a\"].model"));
  EXPECT_EQ(out.requests[0].devices[2].reason, "taint broken=yes:NoSchedule is not tolerated");
  EXPECT_EQ(out.requests[0].devices[3].reason, "");
  EXPECT_EQ(out.requests[0].Candidates(), 2);
  ASSERT_EQ(out.constraint_refusals.size(), 1u);
  EXPECT_EQ(out.constraint_refusals[0].first, "matchAttribute driver-a/numa");
  EXPECT_GT(out.constraint_refusals[0].second, 0);
  const std::string text = FormatExplanation(explanation);
  EXPECT_THAT(text, HasSubstr("request gpus (class class-a, 3 devices): 2 of 4 devices"));
  EXPECT_THAT(text, HasSubstr("constraint matchAttribute driver-a/numa: refused"));
  EXPECT_THAT(text, HasSubstr("no allocation after"));
}

// The search takes a stack frame for every claim it moves to and every device it picks: many
// claims in one call (8,000 here, each asking for a share of one device: some 11 MB of frames in
// an optimized build) overflowed the caller's stack. Such a call runs on a thread with a stack
// of its size.
TEST(AllocatorRegressionTest, ManyClaimsInOneCallDoNotOverflowTheStack) {
  const auto slice =
      Slice("slice-1", R"([{"name": "device-1", "allowMultipleAllocations": true}])");
  constexpr int kClaims = 8'000;
  std::vector<kubeapi::ResourceClaim> claims;
  claims.reserve(kClaims);
  for (int i = 0; i < kClaims; ++i) {
    claims.push_back(Claim(absl::StrCat(
        R"({"metadata": {"name": "claim-)", i, R"("}, "spec": {"devices": {"requests": [)",
        R"({"name": "req-0", "exactly": {"deviceClassName": )", R"("class-a"}}]}}})")));
  }
  std::vector<const kubeapi::ResourceClaim*> pointers;
  for (const kubeapi::ResourceClaim& claim : claims) pointers.push_back(&claim);
  std::unique_ptr<Allocator> allocator =
      Allocator::Create(AllocatorOptions{}, {}, {ClassOf("class-a", "driver-a")}, {slice});
  auto result = allocator->Allocate(Node1(), pointers);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->has_value());
  ASSERT_EQ((*result)->size(), static_cast<size_t>(kClaims));
  EXPECT_THAT(Picks((*result)->back()), ElementsAre("req-0=device-1"));
}

}  // namespace
}  // namespace devmgr::structured
