// Consumable capacity (DRAConsumableCapacity): a device that allows multiple allocations hands
// out parts of its capacities, each request's amount rounded up by the capacity's request policy
// (a default, valid values, a range with a step), and never more than the device has.
//
// A range's step is counted in whole units (Quantity.Value(), which rounds up: a step of 500m
// counts as 1) unless DRAFractionalCapacityRange is on and the range can be counted in
// thousandths (UseMilli); then min, step and the amount are counted in milli-units, so that
// 500m..1500m in steps of 500m takes 1500m as it is and rounds 1200m up to 1500m.
#pragma once

#include <cstdint>
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
//    In milli-units (UseMilli) the texts are "... request 1000000100n is not a representable
//    milli value" (a finer fraction, or past int64 in milli-units: with the gate on that ends the
//    allocation even on a range of whole numbers, as upstream's does) and "... rounding request
//    ... up to the next step passes the milli-value range". A negative step (kubernetes#141166)
//    fails with the MaxInt64 text for any request from the minimum up, as upstream's does.
//    Amounts are written in resource.Quantity's canonical form (Quantity::ToString: "10e18",
//    "3Gi").
// `fractional_capacity_range`: the DRAFractionalCapacityRange gate.
absl::StatusOr<bool> FitsCapacity(const ConsumedCapacity& consumed,
                                  const CapacityRequests& requests,
                                  const std::map<std::string, DeviceCapacity>& capacity,
                                  bool fractional_capacity_range);

// EndsAllocation: whether an error of FitsCapacity or ConsumedByRequest ends the allocation
// (true) or only rules out the device (false).
inline bool EndsAllocation(const absl::Status& status) {
  return status.code() != absl::StatusCode::kFailedPrecondition;
}

// ConsumedByRequest: what the request takes of each of the device's capacities; FitsCapacity's
// InvalidArgument errors where a share cannot be counted.
absl::StatusOr<ConsumedCapacity> ConsumedByRequest(
    const CapacityRequests& requests, const std::map<std::string, DeviceCapacity>& capacity,
    bool fractional_capacity_range);

// SafeMilliValue: upstream's safeMilliValue: `quantity` in milli-units, when that is exact
// and fits in int64 (not 0.0005, nor 1e17); std::nullopt otherwise.
std::optional<int64_t> SafeMilliValue(const kubeapi::Quantity& quantity);

// UseMilli: upstream's useMilli: whether a range's rounding and step check count in
// milli-units: the gate is on, each of min, max and step the range has is a SafeMilliValue, and
// the step is at least 1m. A range of whole numbers qualifies too, as in upstream's current
// useMilli (its case "all integer, fits in milli (no hasFractional gate any more)"); an earlier
// version also wanted one of them fractional, as the API's description of the gate still says.
bool UseMilli(const CapacityRequestPolicy::Range& range, bool fractional_capacity_range);

// AddTo adds `amounts` into `total` (SubtractFrom takes them out, dropping what reaches zero).
void AddTo(ConsumedCapacity& total, const ConsumedCapacity& amounts);
void SubtractFrom(ConsumedCapacity& total, const ConsumedCapacity& amounts);

}  // namespace devmgr::structured
