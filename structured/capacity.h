// Consumable capacity (DRAConsumableCapacity): a device that allows multiple allocations hands
// out parts of its capacities, each request's amount rounded up by the capacity's request policy
// (a default, valid values, a range with a step), and never more than the device has.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "kubeapi/quantity.h"
#include "structured/device.h"

namespace devmgr::structured {

// Capacity name -> amount: what a request consumes of a device, or what is consumed of it.
using ConsumedCapacity = std::map<std::string, kubeapi::Quantity>;

// Requests: a request's capacity.requests (std::nullopt: it has none).
using CapacityRequests = std::optional<std::map<std::string, kubeapi::Quantity>>;

// FitsCapacity: upstream's CmpRequestOverCapacity: whether the request's share of every
// capacity keeps to its policy and, with what `consumed` already holds, within the device's
// value. FailedPrecondition "some requested capacity has not been defined" when the request
// names a capacity the device does not have.
absl::StatusOr<bool> FitsCapacity(const ConsumedCapacity& consumed, const CapacityRequests& requests,
                                  const std::map<std::string, DeviceCapacity>& capacity);

// ConsumedByRequest: what the request takes of each of the device's capacities.
ConsumedCapacity ConsumedByRequest(const CapacityRequests& requests,
                                   const std::map<std::string, DeviceCapacity>& capacity);

// AddTo adds `amounts` into `total` (SubtractFrom takes them out, dropping what reaches zero).
void AddTo(ConsumedCapacity& total, const ConsumedCapacity& amounts);
void SubtractFrom(ConsumedCapacity& total, const ConsumedCapacity& amounts);

}  // namespace devmgr::structured
