// Upstream's TestConsumableCapacity (structured/internal/{incubating,experimental}/
// consumable_capacity_test.go in k8s.io/dynamic-resource-allocation at 3d03671, July 2026), case
// by case under its subtests' names: adding and taking back
// consumed capacity, what a request consumes of each capacity, and which amounts a capacity's
// request policy refuses. Upstream calls its internal helpers (violatesPolicy,
// calculateConsumedCapacity); here the same cases go through capacity.h, which the allocator uses.
#include "structured/capacity.h"

#include <gtest/gtest.h>

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
  const ConsumedCapacity consumed = ConsumedByRequest(requests, capacity);
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
    const ConsumedCapacity consumed =
        ConsumedByRequest(requests, {{"capacity-0", {c.capacity, c.policy}}});
    ASSERT_EQ(consumed.count("capacity-0"), 1u);
    EXPECT_EQ(consumed.at("capacity-0").Compare(c.expected), 0)
        << "expected " << c.expected.ToString();
  }
}

}  // namespace
}  // namespace devmgr::structured
