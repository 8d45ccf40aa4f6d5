#include "structured/capacity.h"

#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace devmgr::structured {
namespace {

using kubeapi::Int128;
using kubeapi::Quantity;

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

// Upstream's errCapacityRequestNotRepresentable, with what could not be represented.
absl::Status NotRepresentable(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "capacity request cannot be represented in the device's range arithmetic: ", why));
}

// StepsUp: upstream's count of `step`s from min (`added` above it) to the rounded value: the
// quotient, one more where it leaves a remainder (Go's division truncates, as C++'s does). In 128
// bits, where values of int64's range cannot overflow.
Int128 StepsUp(Int128 added, Int128 step) {
  Int128 steps = added / step;
  if (added % step != 0) ++steps;
  return steps;
}

// roundUpRange in milli-units (UseMilli holds, so min and step are SafeMilliValues and the step is
// at least 1m). The request must be a SafeMilliValue too: one with a finer fraction (1.0000001)
// is refused, as upstream refuses it, rather than rounded. Formed in 128 bits like the whole
// path below; the result must fit int64 in milli-units. Upstream compares against
// (MaxInt64 - min) / step, which is the same test for the non-negative minimum the API allows.
// The result is in the step's format: a whole number as NewQuantity keeps it, anything else as
// NewMilliQuantity does ("1500m").
absl::StatusOr<Quantity> RoundUpRangeMilli(const Quantity& requested,
                                           const CapacityRequestPolicy::Range& range) {
  const std::optional<int64_t> request = SafeMilliValue(requested);
  if (!request.has_value()) {
    return NotRepresentable(
        absl::StrCat("request ", requested.ToString(), " is not a representable milli value"));
  }
  const int64_t min = *SafeMilliValue(*range.min);
  const int64_t step = *SafeMilliValue(*range.step);
  const Int128 rounded = min + step * StepsUp(static_cast<Int128>(*request) - min, step);
  if (rounded > kMaxInt64) {
    return NotRepresentable(absl::StrCat("rounding request ", requested.ToString(),
                                         " up to the next step passes the milli-value range"));
  }
  const auto milli = static_cast<int64_t>(rounded);
  const Quantity::Format format = range.step->format();
  if (milli % 1000 == 0) return Quantity::FromInt64(milli / 1000, format);
  return Quantity::FromMilli(milli, format);
}

// roundUpRange: below the minimum, the minimum; else up to the next step above it, in
// milli-units where UseMilli says so. Otherwise upstream rounds whole numbers (Quantity.Value(),
// rounded up) in int64, so a request past MaxInt64, or one whose next step is, cannot be
// represented there; it is an error (kubernetes#140442) instead of the wrapped value
// (kubernetes#140441). The result is a whole number in the step's format.
//
// Upstream's test for the next step passing MaxInt64 is n > (MaxInt64 - min) / step, for a
// non-negative minimum. A negative step (which API validation refuses) makes the right-hand side
// negative, so every request at or above the minimum fails that test, with that text: the cases
// of kubernetes#141166, whose TODO is a text about the step instead. The arithmetic is in 128
// bits, where it cannot overflow: the request and the minimum are within int64, and the steps
// added stay below request + step. Where upstream's Go would wrap (a negative minimum, outside
// the API's range) a result past MaxInt64 fails the same way.
absl::StatusOr<Quantity> RoundUpRange(const Quantity& requested,
                                      const CapacityRequestPolicy::Range& range,
                                      bool fractional_capacity_range) {
  if (requested.Compare(*range.min) < 0) return *range.min;
  if (!range.step.has_value()) return requested;
  if (UseMilli(range, fractional_capacity_range)) return RoundUpRangeMilli(requested, range);
  if (requested.Compare(Quantity::FromInt64(kMaxInt64)) > 0) {
    return NotRepresentable(absl::StrCat("request ", requested.ToString(), " exceeds MaxInt64"));
  }
  const int64_t step = range.step->CeilInt64();
  // API validation refuses a zero step; upstream would divide by it.
  if (step == 0) return requested;
  const int64_t min = range.min->CeilInt64();
  const Int128 steps = StepsUp(static_cast<Int128>(requested.CeilInt64()) - min, step);
  const Int128 rounded = min + step * steps;
  if ((min >= 0 && steps > (kMaxInt64 - min) / step) || rounded > kMaxInt64) {
    return NotRepresentable(absl::StrCat("rounding request ", requested.ToString(),
                                         " up to the next step passes MaxInt64"));
  }
  return Quantity::FromInt64(static_cast<int64_t>(rounded), range.step->format());
}

// roundUpValidValues: the first valid value at least the request, else the request itself.
Quantity RoundUpValidValues(const Quantity& requested, const std::vector<Quantity>& valid) {
  for (const Quantity& value : valid) {
    if (requested.Compare(value) <= 0) return value;
  }
  return requested;
}

// calculateConsumedCapacity: what one request takes of one capacity.
absl::StatusOr<Quantity> Consumed(const Quantity* requested, const DeviceCapacity& capacity,
                                  bool fractional_capacity_range) {
  const std::optional<CapacityRequestPolicy>& policy = capacity.request_policy;
  if (requested == nullptr) {
    if (policy.has_value() && policy->default_value.has_value()) return *policy->default_value;
    return capacity.value;
  }
  if (!policy.has_value()) return *requested;
  if (policy->valid_range.has_value() && policy->valid_range->min.has_value()) {
    return RoundUpRange(*requested, *policy->valid_range, fractional_capacity_range);
  }
  if (!policy->valid_values.empty()) return RoundUpValidValues(*requested, policy->valid_values);
  return *requested;
}

// violatesPolicy. The step is checked in milli-units where UseMilli says so (an amount that is
// not a SafeMilliValue violates the range), else on whole numbers as upstream does; in 128 bits
// either way, so that the difference cannot overflow.
bool ViolatesPolicy(const Quantity& amount, const std::optional<CapacityRequestPolicy>& policy,
                    bool fractional_capacity_range) {
  if (!policy.has_value()) return false;
  if (policy->default_value.has_value() && amount == *policy->default_value) return false;
  if (policy->valid_range.has_value()) {
    const CapacityRequestPolicy::Range& range = *policy->valid_range;
    if (range.max.has_value() && amount.Compare(*range.max) > 0) return true;
    if (range.step.has_value() && range.min.has_value()) {
      if (UseMilli(range, fractional_capacity_range)) {
        const std::optional<int64_t> milli = SafeMilliValue(amount);
        if (!milli.has_value()) return true;
        const Int128 added = static_cast<Int128>(*milli) - *SafeMilliValue(*range.min);
        return added % *SafeMilliValue(*range.step) != 0;
      }
      // A step of either sign, as upstream's remainder; none for a zero step (upstream's Go
      // would divide by it).
      const int64_t step = range.step->CeilInt64();
      const Int128 added =
          static_cast<Int128>(amount.CeilInt64()) - static_cast<Int128>(range.min->CeilInt64());
      if (step != 0 && added % step != 0) return true;
    }
    return false;
  }
  if (!policy->valid_values.empty()) {
    for (const Quantity& value : policy->valid_values) {
      if (amount.Compare(value) == 0) return false;
    }
    return true;
  }
  return false;
}

const Quantity* Requested(const CapacityRequests& requests, const std::string& name) {
  if (!requests.has_value()) return nullptr;
  auto it = requests->find(name);
  return it == requests->end() ? nullptr : &it->second;
}

// The request's share of every capacity of the device, or why one cannot be counted: it cannot
// be computed, or it is negative (which would lower what the device has consumed,
// kubernetes#140468). Upstream's texts, naming the capacity.
absl::StatusOr<ConsumedCapacity> Shares(const CapacityRequests& requests,
                                        const std::map<std::string, DeviceCapacity>& capacity,
                                        bool fractional_capacity_range) {
  ConsumedCapacity out;
  for (const auto& [name, device_capacity] : capacity) {
    absl::StatusOr<Quantity> amount =
        Consumed(Requested(requests, name), device_capacity, fractional_capacity_range);
    if (!amount.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("capacity \"", name, "\": ", amount.status().message()));
    }
    if (amount->Sign() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("capacity \"", name, "\": capacity value is negative"));
    }
    out.emplace(name, *std::move(amount));
  }
  return out;
}

}  // namespace

absl::StatusOr<bool> FitsCapacity(const ConsumedCapacity& consumed,
                                  const CapacityRequests& requests,
                                  const std::map<std::string, DeviceCapacity>& capacity,
                                  bool fractional_capacity_range) {
  if (requests.has_value()) {
    for (const auto& [name, amount] : *requests) {
      if (capacity.count(name) == 0) {
        return absl::FailedPreconditionError("some requested capacity has not been defined");
      }
    }
  }
  // Every share first: one that ends the allocation does so whatever another capacity says.
  absl::StatusOr<ConsumedCapacity> shares = Shares(requests, capacity, fractional_capacity_range);
  if (!shares.ok()) return shares.status();
  for (const auto& [name, device_capacity] : capacity) {
    const Quantity& amount = shares->at(name);
    if (ViolatesPolicy(amount, device_capacity.request_policy, fractional_capacity_range)) {
      return false;
    }
    Quantity total = amount;
    if (auto it = consumed.find(name); it != consumed.end()) {
      absl::StatusOr<Quantity> sum = total.Add(it->second);
      if (!sum.ok()) return false;
      total = *sum;
    }
    if (total.Compare(device_capacity.value) > 0) return false;
  }
  return true;
}

absl::StatusOr<ConsumedCapacity> ConsumedByRequest(
    const CapacityRequests& requests, const std::map<std::string, DeviceCapacity>& capacity,
    bool fractional_capacity_range) {
  return Shares(requests, capacity, fractional_capacity_range);
}

std::optional<int64_t> SafeMilliValue(const Quantity& quantity) { return quantity.ExactMilli(); }

bool UseMilli(const CapacityRequestPolicy::Range& range, bool fractional_capacity_range) {
  if (!fractional_capacity_range) return false;
  for (const std::optional<Quantity>* bound : {&range.min, &range.max, &range.step}) {
    if (bound->has_value() && !SafeMilliValue(**bound).has_value()) return false;
  }
  return !range.step.has_value() || *SafeMilliValue(*range.step) >= 1;
}

void AddTo(ConsumedCapacity& total, const ConsumedCapacity& amounts) {
  for (const auto& [name, amount] : amounts) {
    auto [it, inserted] = total.emplace(name, amount);
    if (!inserted) it->second = it->second.Add(amount).value_or(it->second);
  }
}

void SubtractFrom(ConsumedCapacity& total, const ConsumedCapacity& amounts) {
  for (const auto& [name, amount] : amounts) {
    auto it = total.find(name);
    if (it == total.end()) continue;
    it->second = it->second.Sub(amount).value_or(it->second);
    if (it->second.Sign() == 0) total.erase(it);
  }
}

}  // namespace devmgr::structured
