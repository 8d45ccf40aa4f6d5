#include "structured/capacity.h"

namespace devmgr::structured {
namespace {

using kubeapi::Quantity;

// roundUpRange: below the minimum, the minimum; else up to the next step above it.
Quantity RoundUpRange(const Quantity& requested, const CapacityRequestPolicy::Range& range) {
  if (requested.Compare(*range.min) < 0) return *range.min;
  if (!range.step.has_value()) return requested;
  const int64_t step = range.step->CeilInt64();
  const int64_t min = range.min->CeilInt64();
  if (step <= 0) return requested;
  const int64_t added = requested.CeilInt64() - min;
  int64_t steps = added / step;
  if (added % step != 0) ++steps;
  return Quantity::FromInt64(min + step * steps);
}

// roundUpValidValues: the first valid value at least the request, else the request itself.
Quantity RoundUpValidValues(const Quantity& requested, const std::vector<Quantity>& valid) {
  for (const Quantity& value : valid) {
    if (requested.Compare(value) <= 0) return value;
  }
  return requested;
}

// calculateConsumedCapacity: what one request takes of one capacity.
Quantity Consumed(const Quantity* requested, const DeviceCapacity& capacity) {
  const std::optional<CapacityRequestPolicy>& policy = capacity.request_policy;
  if (requested == nullptr) {
    if (policy.has_value() && policy->default_value.has_value()) return *policy->default_value;
    return capacity.value;
  }
  if (!policy.has_value()) return *requested;
  if (policy->valid_range.has_value() && policy->valid_range->min.has_value()) {
    return RoundUpRange(*requested, *policy->valid_range);
  }
  if (!policy->valid_values.empty()) return RoundUpValidValues(*requested, policy->valid_values);
  return *requested;
}

// violatesPolicy.
bool ViolatesPolicy(const Quantity& amount, const std::optional<CapacityRequestPolicy>& policy) {
  if (!policy.has_value()) return false;
  if (policy->default_value.has_value() && amount == *policy->default_value) return false;
  if (policy->valid_range.has_value()) {
    const CapacityRequestPolicy::Range& range = *policy->valid_range;
    if (range.max.has_value() && amount.Compare(*range.max) > 0) return true;
    if (range.step.has_value() && range.min.has_value()) {
      const int64_t step = range.step->CeilInt64();
      if (step > 0 && (amount.CeilInt64() - range.min->CeilInt64()) % step != 0) return true;
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

}  // namespace

absl::StatusOr<bool> FitsCapacity(const ConsumedCapacity& consumed, const CapacityRequests& requests,
                                  const std::map<std::string, DeviceCapacity>& capacity) {
  if (requests.has_value()) {
    for (const auto& [name, amount] : *requests) {
      if (capacity.count(name) == 0) {
        return absl::FailedPreconditionError("some requested capacity has not been defined");
      }
    }
  }
  for (const auto& [name, device_capacity] : capacity) {
    const Quantity amount = Consumed(Requested(requests, name), device_capacity);
    if (ViolatesPolicy(amount, device_capacity.request_policy)) return false;
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

ConsumedCapacity ConsumedByRequest(const CapacityRequests& requests,
                                   const std::map<std::string, DeviceCapacity>& capacity) {
  ConsumedCapacity out;
  for (const auto& [name, device_capacity] : capacity) {
    out.emplace(name, Consumed(Requested(requests, name), device_capacity));
  }
  return out;
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
