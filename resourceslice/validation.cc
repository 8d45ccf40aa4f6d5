#include "resourceslice/validation.h"

#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "kubeapi/resource_validation.h"

namespace devmgr::resourceslice {

absl::Status ValidatePool(const std::string& name, const Pool& pool) {
  std::map<std::string, const kubeapi::CounterSet*> counter_sets;
  for (const Slice& slice : pool.slices) {
    for (const kubeapi::CounterSet& set : slice.shared_counters) {
      if (!counter_sets.emplace(set.name, &set).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("found duplicate counter set \"", set.name, "\" in pool \"", name, "\""));
      }
    }
  }
  std::set<std::string> devices;
  for (const Slice& slice : pool.slices) {
    for (const kubeapi::Device& device : slice.devices) {
      if (!devices.insert(device.name).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("found duplicate device \"", device.name, "\" in pool \"", name, "\""));
      }
      for (const kubeapi::DeviceCounterConsumption& consumption : device.consumes_counters) {
        auto set = counter_sets.find(consumption.counter_set);
        if (set == counter_sets.end()) {
          return absl::InvalidArgumentError(absl::StrCat("counter set \"", consumption.counter_set,
                                                         "\" referenced by device \"", device.name,
                                                         "\" not found"));
        }
        for (const auto& [counter, value] : consumption.counters.items()) {
          if (!set->second->counters.contains(counter)) {
            return absl::InvalidArgumentError(
                absl::StrCat("counter \"", counter, "\" referenced by device \"", device.name,
                             "\" not found in counter set \"", set->second->name, "\""));
          }
        }
      }
    }
  }
  // Then what the API server would refuse of each slice: retrying could not help.
  for (size_t i = 0; i < pool.slices.size(); ++i) {
    const Slice& slice = pool.slices[i];
    if (absl::Status valid = kubeapi::ValidateSliceContents(
            slice.devices, slice.shared_counters, slice.per_device_node_selection.value_or(false));
        !valid.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pool \"", name, "\", slice #", i, ": ", valid.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace devmgr::resourceslice
