// ResourceClaim and DeviceClass (resource.k8s.io/v1) as C++ values: what an allocator reads of
// them (the claim's device requests, constraints and configuration; the class's selectors and
// configuration) and what it writes (status.allocation), with their JSON codecs.
//
// A claim keeps the document it was read from: writing an allocation back changes
// status.allocation and nothing else, so every field devmgr does not model survives.
//
// Reading applies the API server's defaults to what a hand-written manifest may leave out (a
// request's allocationMode ExactCount and count 1, a toleration's operator Equal), so that a file
// reads as `kubectl get -o yaml` would print it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kubeapi/object_meta.h"
#include "kubeapi/quantity.h"
#include "kubeapi/resource_slice.h"

namespace devmgr::kubeapi {

inline constexpr char kAllocationModeExactCount[] = "ExactCount";
inline constexpr char kAllocationModeAll[] = "All";
inline constexpr char kAllocationConfigSourceClass[] = "FromClass";
inline constexpr char kAllocationConfigSourceClaim[] = "FromClaim";
// resourceapi.AllocationResultsMaxSize: the most devices one claim may be allocated.
inline constexpr int kAllocationResultsMaxSize = 32;

// selectors[]: std::nullopt for a selector of a kind this version does not know (no `cel`).
struct DeviceSelector {
  std::optional<std::string> cel_expression;

  bool operator==(const DeviceSelector&) const = default;
};

// tolerations[] of a request, copied into the allocation results.
struct DeviceToleration {
  std::string key;
  std::string op = "Equal";  // "operator": Equal or Exists
  std::string value;
  std::string effect;
  std::optional<int64_t> toleration_seconds;
  Json extra = Json::object();

  bool operator==(const DeviceToleration&) const = default;
};

// What a request asks of one device: exactly.{...} of a request, or one of firstAvailable[]
// (a subrequest has its own name and no adminAccess).
struct ExactDeviceRequest {
  std::string device_class_name;
  std::vector<DeviceSelector> selectors;
  std::string allocation_mode = kAllocationModeExactCount;
  int64_t count = 1;
  std::optional<bool> admin_access;
  std::vector<DeviceToleration> tolerations;
  // capacity.requests (consumable capacity): capacity name -> amount; std::nullopt: no
  // `capacity` field.
  std::optional<std::map<std::string, Quantity>> capacity_requests;

  bool operator==(const ExactDeviceRequest&) const = default;
};

struct DeviceSubRequest {
  std::string name;
  ExactDeviceRequest request;

  bool operator==(const DeviceSubRequest&) const = default;
};

// spec.devices.requests[]: exactly one of `exactly` and `first_available` is set in a valid
// claim.
struct DeviceRequest {
  std::string name;
  std::optional<ExactDeviceRequest> exactly;
  std::vector<DeviceSubRequest> first_available;

  bool operator==(const DeviceRequest&) const = default;
};

// spec.devices.constraints[]: neither attribute set is a constraint of a kind this version does
// not know.
struct DeviceConstraint {
  std::vector<std::string> requests;
  std::optional<std::string> match_attribute;
  std::optional<std::string> distinct_attribute;

  bool operator==(const DeviceConstraint&) const = default;
};

// spec.devices.config[]: the requests it applies to (none: all) and the configuration itself
// (`opaque`, ...) as the object it came in, without `requests`.
struct DeviceClaimConfiguration {
  std::vector<std::string> requests;
  Json configuration = Json::object();

  bool operator==(const DeviceClaimConfiguration&) const = default;
};

struct DeviceClaim {
  std::vector<DeviceRequest> requests;
  std::vector<DeviceConstraint> constraints;
  std::vector<DeviceClaimConfiguration> config;

  bool operator==(const DeviceClaim&) const = default;
};

// status.allocation.devices.results[].
struct DeviceRequestAllocationResult {
  std::string request;  // "request" or "request/subrequest"
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<bool> admin_access;
  std::vector<DeviceToleration> tolerations;
  std::vector<std::string> binding_conditions;
  std::vector<std::string> binding_failure_conditions;
  std::optional<std::string> share_id;
  std::map<std::string, Quantity> consumed_capacity;
  // DRAOptionalNodeOperations: a copy of the device's ResourceSlice's spec.skipNodeOperations.
  std::vector<std::string> skip_node_operations;

  bool operator==(const DeviceRequestAllocationResult&) const = default;
};

// status.allocation.devices.config[].
struct DeviceAllocationConfiguration {
  std::string source;  // FromClass or FromClaim
  std::vector<std::string> requests;
  Json configuration = Json::object();

  bool operator==(const DeviceAllocationConfiguration&) const = default;
};

// status.allocation.
struct AllocationResult {
  std::vector<DeviceRequestAllocationResult> results;
  std::vector<DeviceAllocationConfiguration> config;
  // A core/v1 NodeSelector; std::nullopt: the devices are reachable from every node.
  std::optional<Json> node_selector;
  std::optional<std::string> allocation_timestamp;

  bool operator==(const AllocationResult&) const = default;
};

struct ResourceClaim {
  ObjectMeta metadata;
  DeviceClaim spec;  // spec.devices
  std::optional<AllocationResult> allocation;
  // The document as read (apiVersion, kind, status.reservedFor, ...) less status.allocation.
  Json object = Json::object();

  bool operator==(const ResourceClaim&) const = default;
};

struct DeviceClass {
  ObjectMeta metadata;
  std::vector<DeviceSelector> selectors;
  // spec.config[]: each a DeviceConfiguration object (`opaque`, ...).
  std::vector<Json> config;
  std::optional<std::string> extended_resource_name;
};

// DecodeResourceClaim reads a ResourceClaim of resource.k8s.io/v1 (v1beta1 and v1beta2 as
// kubeapi/resource_versions.h converts them). InvalidArgument naming the field otherwise. It
// reads the shape only: what the API server would refuse beyond that is ValidateResourceClaim's
// (kubeapi/resource_validation.h).
absl::StatusOr<ResourceClaim> DecodeResourceClaim(const Json& object);

// EncodeResourceClaim: the claim's document with status.allocation set from `allocation`
// (removed when it has none).
Json EncodeResourceClaim(const ResourceClaim& claim);

absl::StatusOr<DeviceClass> DecodeDeviceClass(const Json& object);

Json EncodeAllocationResult(const AllocationResult& result);
absl::StatusOr<AllocationResult> DecodeAllocationResult(const Json& object,
                                                        const std::string& field);
Json EncodeToleration(const DeviceToleration& toleration);

}  // namespace devmgr::kubeapi
