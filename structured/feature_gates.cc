#include "structured/feature_gates.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cel/program.h"
#include "common/feature_gate_list.h"

namespace devmgr::structured {

absl::StatusOr<Features> ParseFeatureGates(absl::string_view text, Features features) {
  static const std::map<std::string, bool Features::*> kGates = {
      {"DRAAdminAccess", &Features::admin_access},
      {"DRAConsumableCapacity", &Features::consumable_capacity},
      {"DRADeviceBindingConditions", &Features::device_binding_conditions},
      {"DRADeviceTaints", &Features::device_taints},
      {"DRAFractionalCapacityRange", &Features::fractional_capacity_range},
      {"DRAListTypeAttributes", &Features::list_type_attributes},
      {"DRAOptionalNodeOperations", &Features::optional_node_operations},
      {"DRAPartitionableDevices", &Features::partitionable_devices},
      {"DRAPrioritizedList", &Features::prioritized_list},
      {"DRAResourceClaimDeviceStatus", &Features::resource_claim_device_status},
      {"DRAWorkloadResourceClaims", &Features::workload_resource_claims}};
  absl::StatusOr<std::vector<std::pair<std::string, bool>>> gates = ParseFeatureGateList(text);
  if (!gates.ok()) return gates.status();
  for (const auto& [name, enabled] : *gates) {
    auto gate = kGates.find(name);
    if (gate == kGates.end()) {
      std::vector<std::string> names;
      for (const auto& [known, field] : kGates) names.push_back(known);
      return absl::InvalidArgumentError(absl::StrCat("unrecognized feature gate: ", name,
                                                     " (known: ", absl::StrJoin(names, ", "), ")"));
    }
    features.*(gate->second) = enabled;
  }
  return features;
}

absl::StatusOr<uint64_t> NewSelectorCost::operator()(const std::string& expression) const {
  cel::CheckOptions check;
  check.new_expressions = true;
  check.consumable_capacity = features.consumable_capacity;
  check.list_type_attributes = features.list_type_attributes;
  return cel::SelectorMaxCost(expression, check);
}

}  // namespace devmgr::structured
