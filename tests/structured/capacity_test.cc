// Upstream's TestConsumableCapacity (structured/internal/{incubating,experimental}/
// consumable_capacity_test.go in k8s.io/dynamic-resource-allocation at 3d03671, July 2026), case
// by case under its subtests' names: adding and taking back
// consumed capacity, what a request consumes of each capacity, and which amounts a capacity's
// request policy refuses; the cases kubernetes#140442 added later for amounts past int64; and
// those of kubernetes#140161 and after for DRAFractionalCapacityRange (safe-milli-value,
// use-milli, and the fractional cases of the others, from kubernetes/kubernetes master's
// incubating/consumable_capacity_test.go), and the negative-step cases of kubernetes#141166 (its
// experimental/consumable_capacity_test.go).
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
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace devmgr::structured {
namespace {

using kubeapi::Quantity;

const Quantity kOne = Quantity::FromInt64(1);
const Quantity kTwo = Quantity::FromInt64(2);
const Quantity kThree = Quantity::FromInt64(3);

// The DRAFractionalCapacityRange gate. Upstream's cases leave it off unless they say otherwise.
constexpr bool kGateOff = false;
constexpr bool kGateOn = true;

Quantity Q(const char* text) { return *Quantity::Parse(text); }

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
  absl::StatusOr<ConsumedCapacity> computed = ConsumedByRequest(requests, capacity, kGateOff);
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
    absl::StatusOr<bool> fits = FitsCapacity({}, requests, capacity, kGateOff);
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
        ConsumedByRequest(requests, {{"capacity-0", {c.capacity, c.policy}}}, kGateOff);
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
    EXPECT_FALSE(ConsumedByRequest(requests, capacity, kGateOff).ok());
    absl::StatusOr<bool> fits = FitsCapacity({}, requests, capacity, kGateOff);
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
  absl::StatusOr<ConsumedCapacity> consumed = ConsumedByRequest(requests, capacity, kGateOff);
  ASSERT_TRUE(consumed.ok()) << consumed.status();
  EXPECT_EQ(consumed->at("capacity-0").Compare(max_int64), 0);
  absl::StatusOr<bool> fits = FitsCapacity({}, requests, capacity, kGateOff);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_TRUE(*fits);
  // With 1 taken already, MaxInt64 more does not fit (a soft no, not an error).
  fits = FitsCapacity({{"capacity-0", kOne}}, requests, capacity, kGateOff);
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
  absl::StatusOr<bool> fits = FitsCapacity({}, requests, capacity, kGateOff);
  ASSERT_FALSE(fits.ok()) << "fits: " << *fits;
  EXPECT_EQ(fits.status().code(), absl::StatusCode::kInvalidArgument);
}

// kubernetes#140468: a negative amount is no capacity to count (it would lower what the device
// has consumed); like upstream since kubernetes#140442, it ends the allocation.
TEST(ConsumableCapacityTest, NegativeAmountIsRejected_140468) {
  const std::map<std::string, DeviceCapacity> capacity = {{"cores", {Quantity::FromInt64(4), {}}}};
  const CapacityRequests requests =
      std::map<std::string, Quantity>{{"cores", Quantity::FromInt64(-3)}};
  absl::StatusOr<bool> fits = FitsCapacity({}, requests, capacity, kGateOff);
  ASSERT_FALSE(fits.ok()) << "fits: " << *fits;
  EXPECT_EQ(fits.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fits.status().message(), "capacity \"cores\": capacity value is negative");
}

// safe-milli-value: an amount in milli-units, where that is exact and fits int64.
TEST(ConsumableCapacityTest, SafeMilliValue) {
  EXPECT_EQ(SafeMilliValue(kOne), 1000) << "whole number";
  EXPECT_EQ(SafeMilliValue(Q("100m")), 100) << "fractional milli";
  // Upstream's tooBigForMilli: a whole number, but past int64 in milli-units (about 9.22e21).
  EXPECT_EQ(SafeMilliValue(Q("9224372036854776E3")), std::nullopt)
      << "too large for milli (overflows int64)";
  // Not upstream's cases: the edges of the milli range, a finer fraction, a negative amount.
  EXPECT_EQ(SafeMilliValue(Q("9223372036854775807m")), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(SafeMilliValue(Q("9223372036854775808m")), std::nullopt);
  EXPECT_EQ(SafeMilliValue(Q("-9223372036854775808m")), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(SafeMilliValue(Q("-9223372036854775809m")), std::nullopt);
  EXPECT_EQ(SafeMilliValue(Q("1.0000001")), std::nullopt);
  EXPECT_EQ(SafeMilliValue(Q("1u")), std::nullopt);
  EXPECT_EQ(SafeMilliValue(Q("-1.5")), -1500);
  EXPECT_EQ(SafeMilliValue(Q("1Ki")), 1024000);
}

// use-milli: which ranges count in milli-units.
TEST(ConsumableCapacityTest, UseMilli) {
  struct Case {
    const char* name;
    CapacityRequestPolicy::Range range;
    bool gate;
    bool use_milli;
  };
  const std::vector<Case> cases = {
      {"fractional disabled", Range(Q("200m"), kOne, Q("100m")), kGateOff, false},
      {"all fractional, fits in milli", Range(Q("200m"), kOne, Q("100m")), kGateOn, true},
      {"all integer, fits in milli (no hasFractional gate any more)", Range(kOne, kThree, kOne),
       kGateOn, true},
      {"min overflows milli, falls back to integer",
       Range(Q("9224372036854776E3"), std::nullopt, kOne), kGateOn, false},
      {"step too small (sub-milli)", Range(kOne, std::nullopt, Q("0")), kGateOn, false},
      // Not upstream's: a step finer than 1m is no milli value at all.
      {"step of 1u", Range(kOne, std::nullopt, Q("1u")), kGateOn, false},
      {"no step", Range(Q("200m"), kOne), kGateOn, true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(UseMilli(c.range, c.gate), c.use_milli) << c.name;
  }
}

// violate-capacity-sharing, the fractional cases (min 0.2, max 1, step 0.1). Upstream hands the
// amount to violatesPolicy as it is; through FitsCapacity an amount reaches the policy unrounded
// only as the capacity's whole value, taken by a request that names no amount of a capacity with
// no default, so here each amount is the capacity's value (upstream's default, 0.2, is left out:
// it would be taken instead, and none of the amounts equals it).
TEST(ConsumableCapacityTest, ViolateCapacitySharingFractional) {
  struct Case {
    const char* name;
    Quantity amount;
    CapacityRequestPolicy::Range range;
    bool violates;
  };
  const std::vector<Case> cases = {
      {"fractional step aligned (0.3 = min+1*step)", Q("300m"), Range(Q("200m"), kOne, Q("100m")),
       false},
      {"fractional step not aligned (0.25 is not a multiple of 0.1 from 0.2)", Q("250m"),
       Range(Q("200m"), kOne, Q("100m")), true},
      // The range is in milli-units (no max, min and step 1); the amount is not.
      {"requested value overflows milli representation", Q("9224372036854776E3"),
       Range(kOne, std::nullopt, kOne), true},
  };
  for (const Case& c : cases) {
    const std::map<std::string, DeviceCapacity> capacity = {
        {"capacity-0", {c.amount, Policy(std::nullopt, c.range)}}};
    absl::StatusOr<bool> fits = FitsCapacity({}, std::nullopt, capacity, kGateOn);
    EXPECT_EQ(fits.value_or(c.violates), !c.violates) << c.name << ": " << fits.status();
  }
}

// calculate-consumed-capacity, the cases of DRAFractionalCapacityRange: what a request takes of a
// range counted in milli-units, or that it cannot be counted there (which ends the allocation).
TEST(ConsumableCapacityTest, CalculateConsumedCapacityFractional) {
  const Quantity one_plus_milli = Q("1.001");
  const Quantity one_plus_sub_milli = Q("1.0000001");
  const Quantity point_five = Q("500m");
  const Quantity point_one = Q("100m");
  const Quantity point_two = Q("200m");
  const Quantity too_big_for_milli = Q("9224372036854776E3");
  struct Case {
    const char* name;
    Quantity requested;
    Quantity capacity;
    CapacityRequestPolicy policy;
    bool gate;
    std::optional<Quantity> expected;  // std::nullopt: not representable
    const char* error = "";
  };
  const std::vector<Case> cases = {
      // min 0.2, step 0.1, max 1: 0.25 rounds up to 0.3.
      {"fractional step round up (0.25 to 0.3)", Q("250m"), kOne,
       Policy(point_two, Range(point_two, kOne, point_one)), kGateOn, Q("300m")},
      {"fractional step already aligned (0.4 = min+2*step)", Q("400m"), kOne,
       Policy(point_two, Range(point_two, kOne, point_one)), kGateOn, Q("400m")},
      // Upstream's TODO(#141166): it should round up to 2 instead.
      {"integer-step-sub-milli-request", one_plus_sub_milli, kThree,
       Policy(kOne, Range(kOne, std::nullopt, kOne)), kGateOn, std::nullopt,
       "capacity \"capacity-0\": capacity request cannot be represented in the device's range "
       "arithmetic: request 1000000100n is not a representable milli value"},
      {"integer-step-milli-request-rounds-up", one_plus_milli, kThree,
       Policy(kOne, Range(kOne, std::nullopt, kOne)), kGateOn, kTwo},
      {"integer-step-sub-milli-request-rounds-up-without-fractional-range", one_plus_sub_milli,
       kThree, Policy(kOne, Range(kOne, std::nullopt, kOne)), kGateOff, kTwo},
      // Upstream's TODO(#141166): it should round up to 1.5 instead.
      {"fractional-step-sub-milli-request", one_plus_sub_milli, kTwo,
       Policy(point_five, Range(point_five, std::nullopt, point_five)), kGateOn, std::nullopt},
      {"fractional-step-milli-request-rounds-up", one_plus_milli, kTwo,
       Policy(point_five, Range(point_five, std::nullopt, point_five)), kGateOn, Q("1500m")},
      {"fractional-step-request-not-milli-representable-is-rejected", too_big_for_milli,
       too_big_for_milli, Policy(kOne, Range(point_one, std::nullopt, point_one)), kGateOn,
       std::nullopt},
      // min 100m, step 100m: MaxInt64-1 milli-units round up to MaxInt64+99.
      {"fractional-step-rounded-value-passes-milli-range-is-rejected", Q("9223372036854775806m"),
       Q("9223372036854775807m"), Policy(point_one, Range(point_one, std::nullopt, point_one)),
       kGateOn, std::nullopt,
       "capacity \"capacity-0\": capacity request cannot be represented in the device's range "
       "arithmetic: rounding request 9223372036854775806m up to the next step passes the "
       "milli-value range"},
  };
  // Each case checked by itself, so that one failing does not hide the others.
  const auto check = [](const Case& c) {
    const CapacityRequests requests = std::map<std::string, Quantity>{{"capacity-0", c.requested}};
    const std::map<std::string, DeviceCapacity> capacity = {{"capacity-0", {c.capacity, c.policy}}};
    absl::StatusOr<ConsumedCapacity> consumed = ConsumedByRequest(requests, capacity, c.gate);
    absl::StatusOr<bool> fits = FitsCapacity({}, requests, capacity, c.gate);
    if (!c.expected.has_value()) {
      ASSERT_FALSE(consumed.ok()) << consumed->at("capacity-0").ToString();
      ASSERT_FALSE(fits.ok()) << "fits: " << *fits;
      EXPECT_EQ(fits.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(std::string(fits.status().message()),
                  testing::HasSubstr("capacity request cannot be represented in the device's "
                                     "range arithmetic"));
      if (*c.error != '\0') {
        EXPECT_EQ(fits.status().message(), c.error);
      }
      return;
    }
    ASSERT_TRUE(consumed.ok()) << consumed.status();
    EXPECT_EQ(consumed->at("capacity-0").Compare(*c.expected), 0)
        << "expected " << c.expected->ToString() << ", got "
        << consumed->at("capacity-0").ToString();
    ASSERT_TRUE(fits.ok()) << fits.status();
    EXPECT_TRUE(*fits);
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    check(c);
  }
}

// calculate-consumed-capacity, the negative-step cases (kubernetes#141166, from
// kubernetes/kubernetes master's experimental/consumable_capacity_test.go): a step below zero,
// which API validation refuses but a stored object may still carry, makes upstream's test for
// passing MaxInt64 hold for every request from the minimum up, so those end the allocation with
// that text (upstream's
// TODO is a text about the step); a request below the minimum takes the minimum. A positive
// binary step rounds to a binary quantity, written so.
TEST(ConsumableCapacityTest, CalculateConsumedCapacityNegativeStep) {
  const Quantity five = Quantity::FromInt64(5);
  const Quantity ten = Quantity::FromInt64(10);
  const Quantity fifteen = Quantity::FromInt64(15);
  const Quantity negative_one = Quantity::FromInt64(-1);
  const Quantity one_gi = Q("1Gi");
  const Quantity three_gi = Q("3Gi");
  const Quantity negative_one_gi = Q("-1Gi");
  struct Case {
    const char* name;
    Quantity requested;
    Quantity capacity;
    CapacityRequestPolicy policy;
    bool gate;
    const char* expected;  // the share as written, or the error's text
  };
  const std::vector<Case> accepted = {
      {"negative-step-request-below-min-returns-min", five, fifteen,
       Policy(ten, Range(ten, std::nullopt, negative_one)), kGateOff, "10"},
      {"positive-binary-step-request-above-min-rounds-to-itself", three_gi, three_gi,
       Policy(one_gi, Range(one_gi, std::nullopt, one_gi)), kGateOff, "3Gi"},
  };
  const std::vector<Case> rejected = {
      {"negative-step-request-above-min-is-rejected", fifteen, fifteen,
       Policy(ten, Range(ten, std::nullopt, negative_one)), kGateOff,
       "rounding request 15 up to the next step passes MaxInt64"},
      {"negative-step-request-above-min-is-rejected-with-fractional-range", fifteen, fifteen,
       Policy(ten, Range(ten, std::nullopt, negative_one)), kGateOn,
       "rounding request 15 up to the next step passes MaxInt64"},
      {"negative-step-request-equal-to-min-is-rejected", ten, fifteen,
       Policy(ten, Range(ten, std::nullopt, negative_one)), kGateOff,
       "rounding request 10 up to the next step passes MaxInt64"},
      {"negative-binary-step-request-above-min-is-rejected", three_gi, three_gi,
       Policy(one_gi, Range(one_gi, std::nullopt, negative_one_gi)), kGateOff,
       "rounding request 3Gi up to the next step passes MaxInt64"},
  };
  const auto run = [](const Case& c) {
    const CapacityRequests requests = std::map<std::string, Quantity>{{"capacity-0", c.requested}};
    const std::map<std::string, DeviceCapacity> capacity = {{"capacity-0", {c.capacity, c.policy}}};
    return std::make_pair(ConsumedByRequest(requests, capacity, c.gate),
                          FitsCapacity({}, requests, capacity, c.gate));
  };
  for (const Case& c : accepted) {
    SCOPED_TRACE(c.name);
    const auto [consumed, fits] = run(c);
    ASSERT_TRUE(consumed.ok()) << consumed.status();
    EXPECT_EQ(consumed->at("capacity-0").ToString(), c.expected);
    ASSERT_TRUE(fits.ok()) << fits.status();
    EXPECT_TRUE(*fits);
  }
  for (const Case& c : rejected) {
    SCOPED_TRACE(c.name);
    const auto [consumed, fits] = run(c);
    ASSERT_FALSE(consumed.ok()) << consumed->at("capacity-0").ToString();
    ASSERT_FALSE(fits.ok()) << "fits: " << *fits;
    EXPECT_EQ(fits.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(fits.status().message(),
              absl::StrCat("capacity \"capacity-0\": capacity request cannot be represented in "
                           "the device's range arithmetic: ",
                           c.expected));
  }
}

// Not upstream's: an amount that reaches the policy unrounded (the capacity's whole value, taken
// by a request that names none) is checked against a negative step as upstream's remainder
// checks it: 15 is no whole number of steps of -3 from 10. A zero step checks nothing.
TEST(ConsumableCapacityTest, ViolateCapacitySharingNegativeStep) {
  const Quantity ten = Quantity::FromInt64(10);
  for (const auto& [step, fits] : std::vector<std::pair<int64_t, bool>>{
           {-3, false}, {-5, true}, {0, true}, {3, false}, {5, true}}) {
    const std::map<std::string, DeviceCapacity> capacity = {
        {"capacity-0",
         {Quantity::FromInt64(15),
          Policy(std::nullopt, Range(ten, std::nullopt, Quantity::FromInt64(step)))}}};
    absl::StatusOr<bool> result = FitsCapacity({}, std::nullopt, capacity, kGateOff);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(*result, fits) << "step " << step;
  }
}

// Not upstream's: a rounded share takes the step's format, in whole numbers and in milli-units
// (NewQuantity and NewMilliQuantity with the step's Format): a binary step's share is written in
// binary suffixes where it is a whole number of at least 1Ki.
TEST(ConsumableCapacityTest, ARoundedShareIsInTheStepsFormat) {
  struct Case {
    const char* requested;
    CapacityRequestPolicy::Range range;
    bool gate;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"2.5Gi", Range(Q("1Gi"), std::nullopt, Q("1Gi")), kGateOff, "3Gi"},
      {"2.5Gi", Range(Q("1Gi"), std::nullopt, Q("1Gi")), kGateOn, "3Gi"},
      {"1500", Range(Q("1Ki"), std::nullopt, Q("1Ki")), kGateOn, "2Ki"},
      {"1200m", Range(Q("500m"), std::nullopt, Q("500m")), kGateOn, "1500m"},
      {"1200m", Range(Q("500m"), std::nullopt, Q("500m")), kGateOff, "2"},
      {"2500", Range(Q("1e3"), std::nullopt, Q("1e3")), kGateOff, "3e3"},
  };
  for (const Case& c : cases) {
    const CapacityRequests requests =
        std::map<std::string, Quantity>{{"capacity-0", Q(c.requested)}};
    absl::StatusOr<ConsumedCapacity> consumed = ConsumedByRequest(
        requests, {{"capacity-0", {Q("8Gi"), Policy(std::nullopt, c.range)}}}, c.gate);
    ASSERT_TRUE(consumed.ok()) << consumed.status();
    EXPECT_EQ(consumed->at("capacity-0").ToString(), c.expected) << c.requested;
  }
}

// Not upstream's: the rounding keeps exact in milli-units at the top of their range, and a share
// counted in thousandths adds up exactly (two of 1.5 leave exactly 1 of 4).
TEST(ConsumableCapacityTest, MilliRoundingAtTheEdgesAndSums) {
  const CapacityRequestPolicy tenths =
      Policy(std::nullopt, Range(Q("100m"), std::nullopt, Q("100m")));
  const std::map<std::string, DeviceCapacity> huge = {
      {"capacity-0", {Q("9223372036854775807m"), tenths}}};
  // MaxInt64 - 7 milli-units is 100m + a whole number of steps: it stays as it is.
  const CapacityRequests at_top =
      std::map<std::string, Quantity>{{"capacity-0", Q("9223372036854775800m")}};
  absl::StatusOr<ConsumedCapacity> consumed = ConsumedByRequest(at_top, huge, kGateOn);
  ASSERT_TRUE(consumed.ok()) << consumed.status();
  EXPECT_EQ(consumed->at("capacity-0").Compare(Q("9223372036854775800m")), 0);

  const std::map<std::string, DeviceCapacity> cores = {
      {"cores",
       {Quantity::FromInt64(4), Policy(Q("500m"), Range(Q("500m"), Q("1500m"), Q("500m")))}}};
  const CapacityRequests one_and_a_half = std::map<std::string, Quantity>{{"cores", Q("1200m")}};
  absl::StatusOr<bool> fits = FitsCapacity({{"cores", Q("1500m")}}, one_and_a_half, cores, kGateOn);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_TRUE(*fits) << "1.5 + 1.5 of 4";
  fits = FitsCapacity({{"cores", Q("3")}}, one_and_a_half, cores, kGateOn);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_FALSE(*fits) << "3 + 1.5 of 4";
  // With the gate off, 1.2 is counted as 2 (past the maximum, 1.5): no share fits.
  fits = FitsCapacity({}, one_and_a_half, cores, kGateOff);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_FALSE(*fits);
}

}  // namespace
}  // namespace devmgr::structured
