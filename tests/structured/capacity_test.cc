// Upstream's TestConsumableCapacity (structured/internal/{incubating,experimental}/
// consumable_capacity_test.go in k8s.io/dynamic-resource-allocation at 3d03671, July 2026), case
// by case under its subtests' names: adding and taking back
// consumed capacity, what a request consumes of each capacity, and which amounts a capacity's
// request policy refuses; and the cases kubernetes#140442 added later for amounts past int64.
// Upstream calls its internal helpers (violatesPolicy,
// calculateConsumedCapacity); here the same cases go through capacity.h, which the allocator uses.
#include "structured/capacity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace devmgr::structured {
namespace {

using kubeapi::Quantity;

const Quantity kOne = Quantity::FromInt64(1);
const Quantity kTwo = Quantity::FromInt64(2);
const Quantity kThree = Quantity::FromInt64(3);

CapacityRequestPolicy::Range Range(std::optional<Quantity> min, std::optional<Quantity> max = {},
                                   std::optional<Quantity> step = {}) {
  return {std::move(min), std::move(max), std::move(step)};
}

CapacityRequestPolicy Policy(std::optional<Quantity> default_value,
                             std::optional<CapacityRequestPolicy::Range> range,
                             std::vector<Quantity> valid_values = {}) {
  CapacityRequestPolicy policy;
  policy.default_value = std::move(default_value);
  policy.valid_range = std::move(range);
  policy.valid_values = std::move(valid_values);
  return policy;
}

// add-sub-allocating-consumed-capacity
TEST(ConsumableCapacityTest, AddSubAllocatingConsumedCapacity) {
  ConsumedCapacity allocated;
  EXPECT_TRUE(allocated.empty()) << "allocated capacity should start from zero";
  const ConsumedCapacity one = {{"capacity-0", kOne}};
  AddTo(allocated, one);
  EXPECT_FALSE(allocated.empty()) << "capacity is added";
  SubtractFrom(allocated, one);
  EXPECT_TRUE(allocated.empty()) << "capacity is subtracted to zero";
}

// insert-remove-allocating-consumed-capacity-collection: upstream's collection keeps a device's
// total as a ConsumedCapacity; the allocator keeps one per device the same way.
TEST(ConsumableCapacityTest, InsertRemoveAllocatingConsumedCapacityCollection) {
  const ConsumedCapacity one = {{"capacity-0", kOne}};
  ConsumedCapacity device;
  AddTo(device, one);
  AddTo(device, one);
  ASSERT_EQ(device.count("capacity-0"), 1u);
  EXPECT_EQ(device.at("capacity-0").Compare(kTwo), 0);
  SubtractFrom(device, one);
  EXPECT_EQ(device.at("capacity-0").Compare(kOne), 0);
}

// get-consumed-capacity-from-request: a request for a capacity the device has gets what it
// asked for; one without a request gets the policy's default, or the whole value without one.
TEST(ConsumableCapacityTest, GetConsumedCapacityFromRequest) {
  const CapacityRequests requests = std::map<std::string, Quantity>{
      {"capacity-0", kOne},
      {"dummy", kOne},
  };
  const std::map<std::string, DeviceCapacity> capacity = {
      {"capacity-0", {kTwo, Policy(kTwo, Range(kOne))}},
      {"capacity-1", {kTwo, Policy(kOne, Range(kOne))}},
      {"dummy", {kOne, std::nullopt}},
  };
  absl::StatusOr<ConsumedCapacity> computed = ConsumedByRequest(requests, capacity);
  ASSERT_TRUE(computed.ok()) << computed.status();
  const ConsumedCapacity& consumed = *computed;
  ASSERT_EQ(consumed.size(), 3u);
  for (const char* name : {"capacity-0", "capacity-1", "dummy"}) {
    ASSERT_EQ(consumed.count(name), 1u) << name;
    EXPECT_EQ(consumed.at(name).Compare(kOne), 0) << name;
  }
}

// violate-capacity-sharing: an amount the policy refuses does not fit, whatever room the device
// has (here three, more than any amount asked).
TEST(ConsumableCapacityTest, ViolateCapacitySharing) {
  struct Case {
    const char* name;
    Quantity requested;
    std::optional<CapacityRequestPolicy> policy;
    bool violates;
  };
  const std::vector<Case> cases = {
      {"no constraint", kOne, std::nullopt, false},
      {"less than maximum", kOne, Policy(kOne, Range(kOne, kTwo)), false},
      {"more than maximum", kTwo, Policy(kOne, Range(kOne, kOne)), true},
      {"in set", kOne, Policy(kOne, std::nullopt, {kOne}), false},
      {"not in set", kTwo, Policy(kOne, std::nullopt, {kOne}), true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const CapacityRequests requests = std::map<std::string, Quantity>{{"capacity-0", c.requested}};
    const std::map<std::string, DeviceCapacity> capacity = {{"capacity-0", {kThree, c.policy}}};
    absl::StatusOr<bool> fits = FitsCapacity({}, requests, capacity);
    ASSERT_TRUE(fits.ok()) << fits.status();
    EXPECT_EQ(*fits, !c.violates);
  }
}

// calculate-consumed-capacity: what one request takes of one capacity.
TEST(ConsumableCapacityTest, CalculateConsumedCapacity) {
  struct Case {
    const char* name;
    std::optional<Quantity> requested;
    Quantity capacity;
    CapacityRequestPolicy policy;
    Quantity expected;
  };
  const std::vector<Case> cases = {
      {"empty", std::nullopt, kOne, CapacityRequestPolicy{}, kOne},
      {"min in range", std::nullopt, kTwo, Policy(kOne, Range(kOne)), kOne},
      {"default in set", std::nullopt, kTwo, Policy(kOne, std::nullopt, {kOne}), kOne},
      {"more than min in range", kTwo, kTwo, Policy(kOne, Range(kOne)), kTwo},
      {"less than min in range", kOne, kTwo, Policy(kOne, Range(kTwo)), kTwo},
      {"with step (round up)", kTwo, kThree, Policy(kOne, Range(kOne, std::nullopt, kTwo)), kThree},
      {"with step (no remaining)", kTwo, kTwo, Policy(kOne, Range(kOne, std::nullopt, kOne)), kTwo},
      {"valid value in set", kTwo, kThree, Policy(kOne, std::nullopt, {kOne, kTwo, kThree}), kTwo},
      {"set (round up)", kTwo, kThree, Policy(kOne, std::nullopt, {kOne, kThree}), kThree},
      {"larger than set", kThree, kThree, Policy(kOne, std::nullopt, {kOne, kTwo}), kThree},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CapacityRequests requests;
    if (c.requested.has_value()) {
      requests = std::map<std::string, Quantity>{{"capacity-0", *c.requested}};
    }
    absl::StatusOr<ConsumedCapacity> consumed =
        ConsumedByRequest(requests, {{"capacity-0", {c.capacity, c.policy}}});
    ASSERT_TRUE(consumed.ok()) << consumed.status();
    ASSERT_EQ(consumed->count("capacity-0"), 1u);
    EXPECT_EQ(consumed->at("capacity-0").Compare(c.expected), 0)
        << "expected " << c.expected.ToString();
  }
}

// The calculate-consumed-capacity cases kubernetes#140442 added (#140441): a request, or the
// value it rounds up to, past int64 on a policy that rounds to a step cannot be computed, which
// ends the allocation (an error, not a device that merely does not fit); the largest value that
// still fits rounds exactly.
TEST(ConsumableCapacityTest, CalculateConsumedCapacityPastInt64) {
  const Quantity max_int64 = Quantity::FromInt64(std::numeric_limits<int64_t>::max());
  const Quantity max_int64_plus_1 = *Quantity::Parse("9223372036854775808");
  const Quantity two_pow_64_plus_3 = *Quantity::Parse("18446744073709551619");
  const Quantity zero = Quantity::FromInt64(0);
  struct Case {
    const char* name;
    Quantity requested;
    Quantity capacity;
    CapacityRequestPolicy policy;
  };
  const std::vector<Case> rejected = {
      {"request-above-maxint64-is-rejected", two_pow_64_plus_3, two_pow_64_plus_3,
       Policy(zero, Range(zero, std::nullopt, kThree))},
      {"rounded-value-above-maxint64-is-rejected", max_int64, max_int64_plus_1,
       Policy(zero, Range(zero, std::nullopt, kTwo))},
  };
  for (const Case& c : rejected) {
    SCOPED_TRACE(c.name);
    const CapacityRequests requests = std::map<std::string, Quantity>{{"capacity-0", c.requested}};
    const std::map<std::string, DeviceCapacity> capacity = {{"capacity-0", {c.capacity, c.policy}}};
    EXPECT_FALSE(ConsumedByRequest(requests, capacity).ok());
    absl::StatusOr<bool> fits = FitsCapacity({}, requests, capacity);
    ASSERT_FALSE(fits.ok()) << "fits: " << *fits;
    EXPECT_EQ(fits.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(fits.status().message()),
                testing::HasSubstr("capacity request cannot be represented in the device's range "
                                   "arithmetic"));
  }

  // max-safe-boundary-rounds-to-maxint64: MaxInt64-1 from 1 in steps of 2 is MaxInt64 itself.
  const Quantity max_int64_minus_1 = Quantity::FromInt64(std::numeric_limits<int64_t>::max() - 1);
  const std::map<std::string, DeviceCapacity> capacity = {
      {"capacity-0", {max_int64, Policy(kOne, Range(kOne, std::nullopt, kTwo))}}};
  const CapacityRequests requests =
      std::map<std::string, Quantity>{{"capacity-0", max_int64_minus_1}};
  absl::StatusOr<ConsumedCapacity> consumed = ConsumedByRequest(requests, capacity);
  ASSERT_TRUE(consumed.ok()) << consumed.status();
  EXPECT_EQ(consumed->at("capacity-0").Compare(max_int64), 0);
  absl::StatusOr<bool> fits = FitsCapacity({}, requests, capacity);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_TRUE(*fits);
  // With 1 taken already, MaxInt64 more does not fit (a soft no, not an error).
  fits = FitsCapacity({{"capacity-0", kOne}}, requests, capacity);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_FALSE(*fits);
}

// cmp-request-over-capacity-fatal-beats-soft: an amount that cannot be computed ends the
// allocation even when another capacity of the same device already does not fit.
TEST(ConsumableCapacityTest, CmpRequestOverCapacityFatalBeatsSoft) {
  const Quantity zero = Quantity::FromInt64(0);
  const std::map<std::string, DeviceCapacity> capacity = {
      {"capacity-0", {kOne, std::nullopt}},
      {"capacity-1",
       {*Quantity::Parse("9223372036854775808"),
        Policy(std::nullopt, Range(zero, std::nullopt, kTwo))}},
  };
  const CapacityRequests requests = std::map<std::string, Quantity>{
      {"capacity-0", kTwo},
      {"capacity-1", Quantity::FromInt64(std::numeric_limits<int64_t>::max())},
  };
  absl::StatusOr<bool> fits = FitsCapacity({}, requests, capacity);
  ASSERT_FALSE(fits.ok()) << "fits: " << *fits;
  EXPECT_EQ(fits.status().code(), absl::StatusCode::kInvalidArgument);
}

// kubernetes#140468: a negative amount is no capacity to count (it would lower what the device
// has consumed); like upstream since kubernetes#140442, it ends the allocation.
TEST(ConsumableCapacityTest, NegativeAmountIsRejected_140468) {
  const std::map<std::string, DeviceCapacity> capacity = {{"cores", {Quantity::FromInt64(4), {}}}};
  const CapacityRequests requests =
      std::map<std::string, Quantity>{{"cores", Quantity::FromInt64(-3)}};
  absl::StatusOr<bool> fits = FitsCapacity({}, requests, capacity);
  ASSERT_FALSE(fits.ok()) << "fits: " << *fits;
  EXPECT_EQ(fits.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fits.status().message(), "capacity \"cores\": capacity value is negative");
}

}  // namespace
}  // namespace devmgr::structured
