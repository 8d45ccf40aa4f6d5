#include "structured/feature_gates.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace devmgr::structured {

absl::StatusOr<Features> ParseFeatureGates(absl::string_view text, Features features) {
  static const std::map<std::string, bool Features::*> kGates = {
      {"DRAAdminAccess", &Features::admin_access},
      {"DRAConsumableCapacity", &Features::consumable_capacity},
      {"DRADeviceBindingConditions", &Features::device_binding_and_status},
      {"DRADeviceTaints", &Features::device_taints},
      {"DRAFractionalCapacityRange", &Features::fractional_capacity_range},
      {"DRAListTypeAttributes", &Features::list_type_attributes},
      {"DRAPartitionableDevices", &Features::partitionable_devices},
      {"DRAPrioritizedList", &Features::prioritized_list}};
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(item, absl::MaxSplits('=', 1));
    auto gate = kGates.find(parts[0]);
    if (gate == kGates.end() || parts.size() != 2 || (parts[1] != "true" && parts[1] != "false")) {
      std::vector<std::string> names;
      for (const auto& [name, field] : kGates) names.push_back(name);
      return absl::InvalidArgumentError(absl::StrCat(
          "\"", item, "\" is not NAME=true|false with NAME one of ", absl::StrJoin(names, ", ")));
    }
    features.*(gate->second) = parts[1] == "true";
  }
  return features;
}

}  // namespace devmgr::structured
