// Fuzz target for the DRA allocator (structured/allocator.h), which `devmgr serve` and
// `devmgr dra allocate` run on ResourceSlices any driver publishes and on DeviceClasses and
// ResourceClaims any user writes. The input is a YAML/JSON stream of those objects (the first
// byte picks the feature gates); the claims are allocated together on node "node-1". Whatever
// the input: no crash, an answer within the deadline, one of the allocator's error kinds, and
// when there is an allocation, it is one: every result names a device of the slices for that
// driver, no device is given twice unless shared or with admin access, an ExactCount request
// gets its count, a result skips the node operations its slice skips (none, and from a slice
// that skips none, without DRAOptionalNodeOperations), and the same inputs give the same
// results.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/algorithm/container.h"
#include "cel/program.h"
#include "kubeapi/resource_claim.h"
#include "kubeapi/resource_slice.h"
#include "kubeapi/resource_validation.h"
#include "kubeapi/yaml_objects.h"
#include "structured/allocator.h"
#include "tests/fuzz/invariant.h"

namespace {

using devmgr::fuzz::Invariant;
using devmgr::kubeapi::ResourceClaim;

struct Inputs {
  std::vector<devmgr::kubeapi::ResourceSlicePtr> slices;
  std::vector<devmgr::kubeapi::DeviceClass> classes;
  std::vector<ResourceClaim> claims;
};

// Selectors as a stored object's, with every function and field of the environment.
absl::StatusOr<uint64_t> StoredSelectorCost(const std::string& expression) {
  return devmgr::cel::SelectorMaxCost(expression);
}

// The objects of `text` the allocator reads; those that do not decode (or, for claims and
// classes, do not validate) are left out, as the API server would have refused them.
Inputs Read(const std::string& text) {
  Inputs inputs;
  absl::StatusOr<std::vector<nlohmann::json>> objects = devmgr::kubeapi::ReadObjects(text);
  if (!objects.ok()) return inputs;
  for (const nlohmann::json& object : *objects) {
    if (!object.is_object()) continue;
    // Any JSON value may stand where the kind goes ("kind:" alone is null).
    const auto kind_field = object.find("kind");
    if (kind_field == object.end() || !kind_field->is_string()) continue;
    const std::string& kind = kind_field->get_ref<const std::string&>();
    if (kind == "ResourceSlice") {
      auto slice = devmgr::kubeapi::DecodeResourceSlice(object);
      if (slice.ok()) {
        inputs.slices.push_back(
            std::make_shared<const devmgr::kubeapi::ResourceSlice>(*std::move(slice)));
      }
    } else if (kind == "DeviceClass") {
      auto device_class = devmgr::kubeapi::DecodeValidDeviceClass(object, StoredSelectorCost);
      if (device_class.ok()) inputs.classes.push_back(*std::move(device_class));
    } else if (kind == "ResourceClaim") {
      auto claim = devmgr::kubeapi::DecodeValidResourceClaim(object, StoredSelectorCost);
      if (claim.ok() && inputs.claims.size() < 4) {
        inputs.claims.push_back(*std::move(claim));
      }
    }
  }
  return inputs;
}

using Allocated = absl::StatusOr<std::optional<std::vector<devmgr::kubeapi::AllocationResult>>>;

Allocated Allocate(const Inputs& inputs, const devmgr::structured::AllocatorOptions& options,
                   devmgr::structured::Explanation* explanation = nullptr) {
  std::vector<const ResourceClaim*> claims;
  for (const ResourceClaim& claim : inputs.claims) claims.push_back(&claim);
  auto allocator =
      devmgr::structured::Allocator::Create(options, {}, inputs.classes, inputs.slices);
  return allocator->Allocate(devmgr::structured::Node{"node-1", {{"zone", "a"}}}, claims,
                             explanation);
}

void CheckAllocation(const Inputs& inputs, const devmgr::structured::Features& features,
                     const std::vector<devmgr::kubeapi::AllocationResult>& results) {
  Invariant(results.size() == inputs.claims.size(), "one result per claim");
  // Each device with the skipNodeOperations of every slice that lists it (a pool may list a
  // device in more than one slice or generation).
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<std::vector<std::string>>>
      devices;
  for (const auto& slice : inputs.slices) {
    for (const auto& device : slice->spec.devices) {
      devices[{slice->spec.driver, slice->spec.pool.name, device.name}].push_back(
          slice->spec.skip_node_operations);
    }
  }
  std::set<std::tuple<std::string, std::string, std::string>> taken;
  for (size_t c = 0; c < results.size(); ++c) {
    for (const auto& result : results[c].results) {
      const std::tuple<std::string, std::string, std::string> id{result.driver, result.pool,
                                                                 result.device};
      const auto listed = devices.find(id);
      Invariant(listed != devices.end(), "a result names a device of the slices");
      Invariant(absl::c_linear_search(listed->second, result.skip_node_operations),
                "a result skips the node operations its slice skips");
      if (!features.optional_node_operations) {
        Invariant(result.skip_node_operations.empty(),
                  "without DRAOptionalNodeOperations no result skips a node operation");
      }
      const bool exclusive = !result.share_id.has_value() && !result.admin_access.value_or(false);
      if (exclusive) Invariant(taken.insert(id).second, "no device is given twice");
    }
    for (const auto& request : inputs.claims[c].spec.requests) {
      if (!request.exactly.has_value() ||
          request.exactly->allocation_mode != devmgr::kubeapi::kAllocationModeExactCount) {
        continue;
      }
      int64_t count = 0;
      for (const auto& result : results[c].results) count += result.request == request.name;
      Invariant(count == request.exactly->count, "an ExactCount request gets its count");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Inputs inputs = Read(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  if (inputs.claims.empty()) return 0;
  devmgr::structured::AllocatorOptions options;
  options.timeout = absl::Milliseconds(50);  // inputs whose search explodes end quickly
  options.features.admin_access = (data[0] & 1) != 0;
  options.features.device_taints = (data[0] & 2) != 0;
  options.features.partitionable_devices = (data[0] & 4) != 0;
  options.features.consumable_capacity = (data[0] & 8) != 0;
  options.features.prioritized_list = (data[0] & 16) == 0;
  options.features.optional_node_operations = (data[0] & 32) != 0;
  options.features.list_type_attributes = (data[0] & 64) != 0;
  int shares = 0;
  options.new_share_id = [&shares] { return "share-" + std::to_string(shares++); };

  const absl::Time start = absl::Now();
  const Allocated first = Allocate(inputs, options);
  Invariant(absl::Now() - start < options.timeout + absl::Seconds(2),
            "the search ends at its deadline");
  if (!first.ok()) {
    const absl::StatusCode code = first.status().code();
    Invariant(code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kNotFound ||
                  code == absl::StatusCode::kUnavailable ||
                  code == absl::StatusCode::kFailedPrecondition ||
                  code == absl::StatusCode::kDeadlineExceeded,
              "an error is one the allocator documents");
    return 0;
  }
  if (first->has_value()) CheckAllocation(inputs, options.features, **first);

  // The same inputs give the same answer, with or without an explanation.
  shares = 0;
  devmgr::structured::Explanation explanation;
  const Allocated again = Allocate(inputs, options, &explanation);
  if (!again.ok()) {
    Invariant(absl::IsDeadlineExceeded(again.status()), "the same inputs give the same answer");
    return 0;
  }
  Invariant(again->has_value() == first->has_value(), "the same inputs give the same answer");
  if (first->has_value()) {
    Invariant(**again == **first, "the same inputs give the same results");
  }
  return 0;
}
