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
// value. Errors of two kinds (EndsAllocation tells them apart):
//  - FailedPrecondition "some requested capacity has not been defined": the request names a
//    capacity this device does not have; another device may have it.
//  - InvalidArgument, upstream's texts since kubernetes#140442: a share that cannot be computed
//    ("capacity "bw": capacity request cannot be represented in the device's range
//    arithmetic: request ... exceeds MaxInt64", or "... up to the next step passes MaxInt64") or
//    that is negative ("capacity "cores": capacity value is negative"). Upstream ends the
//    allocation with it rather than trying the next device, so that an out-of-range request
//    cannot drive a long search; it is checked for every capacity before any is found too small.
absl::StatusOr<bool> FitsCapacity(const ConsumedCapacity& consumed,
                                  const CapacityRequests& requests,
                                  const std::map<std::string, DeviceCapacity>& capacity);

// EndsAllocation: whether an error of FitsCapacity or ConsumedByRequest ends the allocation
// (true) or only rules out the device (false).
inline bool EndsAllocation(const absl::Status& status) {
  return status.code() != absl::StatusCode::kFailedPrecondition;
}

// ConsumedByRequest: what the request takes of each of the device's capacities; FitsCapacity's
// InvalidArgument errors where a share cannot be counted.
absl::StatusOr<ConsumedCapacity> ConsumedByRequest(
    const CapacityRequests& requests, const std::map<std::string, DeviceCapacity>& capacity);

// AddTo adds `amounts` into `total` (SubtractFrom takes them out, dropping what reaches zero).
void AddTo(ConsumedCapacity& total, const ConsumedCapacity& amounts);
void SubtractFrom(ConsumedCapacity& total, const ConsumedCapacity& amounts);

}  // namespace devmgr::structured
