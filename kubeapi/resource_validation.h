// The API server's validation of the resource.k8s.io objects that reach devmgr without passing
// an API server (pod manifests, the files of `devmgr dra allocate` and of the node's
// --device-classes, the slices drivers publish into the node's store), with its texts.
//
// ValidateResourceClaim: a ResourceClaim's name and namespace (ValidateObjectMeta) and its spec
// (resource.k8s.io's validateDeviceClaim). The allocator would take some claims a cluster
// refuses (two requests of one name get two counts' results under that name; a constraint or
// configuration naming no request is silently unused), so they are refused here first, with the
// API server's texts:
//   spec.devices.requests[0].name: Invalid value: "GPU": a lowercase RFC 1123 label must ...
// Several errors come as the API server aggregates them: "[first, second]".
//
// What is checked, in upstream's order: the sizes of every list, request and subrequest names
// (DNS labels, unique in their list), exactly one of `exactly` and `firstAvailable`, device class
// names, selectors (a `cel` expression of at most 10 KiB that compiles, "Invalid value: ...:
// compilation failed: ...", whose estimated cost is at most 1,000,000: "Forbidden: too
// complex, exceeds cost limit"), allocation mode and count, tolerations, the requests a
// constraint or a configuration names, constraint attributes (fully qualified names) and
// opaque configurations (driver name, parameters a JSON object of at most 10 KiB).
// Not checked: metadata beyond the name and namespace, fields devmgr does not model
// (derivedAttributes, capacity requests beyond their decoding).
#pragma once

#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubeapi/resource_claim.h"
#include "kubeapi/resource_slice.h"

namespace devmgr::kubeapi {

// SelectorCost: the greatest cost an evaluation of a CEL selector can have, estimated as the API
// server estimates it, or the compiler's error for a selector that does not compile, which the
// API server refuses as an invalid value (structured::NewSelectorCost for an object being
// created, cel::SelectorMaxCost for one already stored; the CEL evaluator is a layer above this
// one).
using SelectorCost = absl::FunctionRef<absl::StatusOr<uint64_t>(const std::string& expression)>;

// ValidateResourceClaim: a claim's name (a DNS-1123 subdomain), its namespace when it has one
// (a DNS-1123 label) and its spec. InvalidArgument with the errors' text; OK for a claim the
// API server would accept.
absl::Status ValidateResourceClaim(const ResourceClaim& claim, SelectorCost cost);

// ValidateDeviceClass: a DeviceClass (ValidateDeviceClass upstream): its name (a DNS-1123
// subdomain, which claims name it by), its selectors and configurations as a claim's, its
// extendedResourceName. "metadata.name: Required value: ..." for a class without a name.
absl::Status ValidateDeviceClass(const DeviceClass& device_class, SelectorCost cost);

// ValidateResourceSlice: a ResourceSlice's spec (validateResourceSliceSpec upstream), for the
// slices drivers publish into a node's own store: the driver and pool names, the pool's
// generation and slice count, exactly one node selection (a node selector as core validation's
// ValidateNodeSelector checks it, with exactly one term), devices or shared counters, at most
// 128 devices (64 when a device has taints, consumes counters or has a list attribute) with
// unique DNS-label names.
// Not checked here: the devices' attributes, capacities, taints and counters beyond their
// decoding.
absl::Status ValidateResourceSlice(const ResourceSlice& slice);

// ValidateSliceContents: the part of ValidateResourceSlice that a slice's devices and shared
// counters decide (one of the two; the device limits and names; each device's own node
// selection, set exactly when the slice's perDeviceNodeSelection is), for a driver's slices
// before they are written.
absl::Status ValidateSliceContents(const std::vector<Device>& devices,
                                   const std::vector<CounterSet>& shared_counters,
                                   bool per_device_node_selection);

// Decode, then validate: the objects as the API server would take them.
absl::StatusOr<ResourceClaim> DecodeValidResourceClaim(const Json& object, SelectorCost cost);
absl::StatusOr<DeviceClass> DecodeValidDeviceClass(const Json& object, SelectorCost cost);

}  // namespace devmgr::kubeapi
