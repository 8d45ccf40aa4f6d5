#include "structured/pools.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"

namespace devmgr::structured {
namespace {

using SlicePtr = std::shared_ptr<const SliceInfo>;

// The newest generation's slices of each pool that reach the node, pools in order of appearance.
struct Gathered {
  std::vector<std::pair<PoolID, std::vector<SlicePtr>>> pools;

  void Add(const SlicePtr& slice) {
    for (auto& [id, slices] : pools) {
      if (id.driver != slice->driver || id.pool != slice->pool) continue;
      const int64_t current = slices.front()->generation;
      if (slice->generation < current) return;
      if (slice->generation > current) slices.clear();
      slices.push_back(slice);
      return;
    }
    pools.push_back({PoolID{slice->driver, slice->pool}, {slice}});
  }
};

// CountersReachEveryNode: upstream takes a slice of shared counters for every node, whatever its
// node selection, in its stable allocator, which it runs while no gate beyond the stable ones
// is on; its incubating and experimental allocators select those slices by node like any other,
// and take them from the whole pool only when the pool's slices for the node are incomplete.
bool CountersReachEveryNode(const Features& features) {
  return !features.device_binding_and_status() && !features.consumable_capacity &&
         !features.list_type_attributes;
}

// Whether the slice has devices reachable from the node (or shares counters every node of the
// pool needs, CountersReachEveryNode).
absl::StatusOr<bool> Reaches(const SliceInfo& slice, const Node& node, const Features& features) {
  if (!features.partitionable_devices &&
      (slice.per_device_node_selection.has_value() || !slice.shared_counters.empty())) {
    return false;
  }
  if (!slice.shared_counters.empty() && CountersReachEveryNode(features)) return true;
  if (!slice.node_name.empty() || slice.all_nodes || slice.node_selector.has_value()) {
    absl::StatusOr<bool> match =
        NodeMatches(node, slice.node_name, slice.all_nodes,
                    slice.node_selector.has_value() ? &*slice.node_selector : nullptr);
    if (!match.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("failed to perform node selection for slice ",
                                                     slice.name, ": ", match.status().message()));
    }
    return *match;
  }
  if (slice.per_device_node_selection.value_or(false)) {
    for (const DeviceInfo& device : slice.devices) {
      absl::StatusOr<bool> match =
          NodeMatches(node, device.node_name, device.all_nodes,
                      device.node_selector.has_value() ? &*device.node_selector : nullptr);
      if (!match.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("failed to perform node selection for device ", device.name, " in slice ",
                         slice.name, ": ", match.status().message()));
      }
      if (*match) return true;
    }
  }
  return false;
}

// The empty string when every counter a device consumes exists, else why not.
std::string CheckConsumption(const std::map<std::string, Counters>& sets,
                             const std::vector<SlicePtr>& slices) {
  for (const SlicePtr& slice : slices) {
    for (const DeviceInfo& device : slice->devices) {
      for (const CounterConsumption& consumption : device.consumes_counters) {
        auto set = sets.find(consumption.counter_set);
        if (set == sets.end())
          return absl::StrCat("counter set ", consumption.counter_set, " not found");
        for (const auto& [name, amount] : consumption.counters) {
          if (set->second.count(name) == 0) {
            return absl::StrCat("counter ", name, " not found in counter set ", set->first);
          }
        }
      }
    }
  }
  return "";
}

Pool InvalidPool(const PoolID& id, std::string reason) {
  Pool pool;
  pool.id = id;
  pool.invalid = true;
  pool.invalid_reason = std::move(reason);
  return pool;
}

// `all_slices`: every slice of the pool's generation when some of them do not reach the node.
Pool BuildPool(const PoolID& id, std::vector<SlicePtr> slices, const Features& features,
               const std::vector<SlicePtr>* all_slices) {
  // By name: the search is first-fit, so drivers order their devices by naming their slices.
  std::stable_sort(slices.begin(), slices.end(),
                   [](const SlicePtr& a, const SlicePtr& b) { return a->name < b->name; });
  std::vector<SlicePtr> device_slices;
  std::vector<SlicePtr> counter_slices;
  for (const SlicePtr& slice : slices) {
    if (features.partitionable_devices && !slice->shared_counters.empty()) {
      counter_slices.push_back(slice);
    } else {
      device_slices.push_back(slice);
    }
  }
  // The pool's slices that do not reach the node (a slice of counters among them, selected by
  // node where CountersReachEveryNode does not hold, gives its sets to the pool all the same).
  std::vector<SlicePtr> elsewhere;
  if (all_slices != nullptr && all_slices->size() != slices.size()) {
    std::set<std::string> reaching;
    for (const SlicePtr& slice : slices) reaching.insert(slice->name);
    for (const SlicePtr& slice : *all_slices) {
      if (reaching.count(slice->name) == 0) elsewhere.push_back(slice);
    }
  }
  // A slice read wrong, wherever it is, makes the pool invalid (upstream fails the allocation
  // on a slice it cannot convert).
  for (const std::vector<SlicePtr>* checked : {&slices, &elsewhere}) {
    for (const SlicePtr& slice : *checked) {
      if (!slice->invalid_reason.empty()) return InvalidPool(id, slice->invalid_reason);
    }
  }
  std::set<std::string> names;
  for (const SlicePtr& slice : device_slices) {
    for (const DeviceInfo& device : slice->devices) {
      if (!names.insert(device.name).second) {
        return InvalidPool(id, absl::StrCat("duplicate device name ", device.name));
      }
    }
  }
  Pool pool;
  pool.id = id;
  pool.slices_targeting_node = device_slices;
  if (!features.partitionable_devices) return pool;

  for (const SlicePtr& slice : elsewhere) {
    (slice->shared_counters.empty() ? pool.slices_not_targeting_node : counter_slices)
        .push_back(slice);
  }
  for (const SlicePtr& slice : counter_slices) {
    for (const auto& [name, counters] : slice->shared_counters) {
      if (!pool.counter_sets.emplace(name, counters).second) {
        return InvalidPool(id, absl::StrCat("duplicate counter set name ", name));
      }
    }
  }
  for (const std::vector<SlicePtr>* checked : {&slices, &pool.slices_not_targeting_node}) {
    if (std::string problem = CheckConsumption(pool.counter_sets, *checked); !problem.empty()) {
      return InvalidPool(id, std::move(problem));
    }
  }
  return pool;
}

}  // namespace

absl::StatusOr<std::vector<Pool>> GatherPools(const std::vector<SlicePtr>& slices, const Node& node,
                                              const Features& features) {
  Gathered gathered;
  for (const SlicePtr& slice : slices) {
    absl::StatusOr<bool> reaches = Reaches(*slice, node, features);
    if (!reaches.ok()) return reaches.status();
    if (*reaches) gathered.Add(slice);
  }

  std::vector<Pool> pools;
  for (const auto& [id, pool_slices] : gathered.pools) {
    const int64_t generation = pool_slices.front()->generation;
    const int64_t count = pool_slices.front()->slice_count;
    if (static_cast<int64_t>(pool_slices.size()) == count) {
      pools.push_back(BuildPool(id, pool_slices, features, nullptr));
      continue;
    }
    // Some slices do not reach the node or are not there yet: look at all of the pool's.
    bool obsolete = false;
    std::vector<SlicePtr> all;
    for (const SlicePtr& slice : slices) {
      if (slice->driver != id.driver || slice->pool != id.pool) continue;
      if (slice->generation > generation) {
        obsolete = true;
        break;
      }
      if (slice->generation == generation) all.push_back(slice);
    }
    if (obsolete) continue;
    if (static_cast<int64_t>(all.size()) != count) {
      Pool incomplete;
      incomplete.id = id;
      incomplete.incomplete = true;
      pools.push_back(std::move(incomplete));
      continue;
    }
    pools.push_back(BuildPool(id, pool_slices, features, &all));
  }
  // By driver and pool name, pools whose devices have binding conditions last (they take longer
  // to become usable).
  auto binding = [](const Pool& pool) {
    for (const SlicePtr& slice : pool.slices_targeting_node) {
      for (const DeviceInfo& device : slice->devices) {
        if (!device.binding_conditions.empty()) return true;
      }
    }
    return false;
  };
  std::stable_sort(pools.begin(), pools.end(), [&](const Pool& a, const Pool& b) {
    const bool a_binding = binding(a);
    const bool b_binding = binding(b);
    if (a_binding != b_binding) return b_binding;
    return std::tie(a.id.driver, a.id.pool) < std::tie(b.id.driver, b.id.pool);
  });
  return pools;
}

}  // namespace devmgr::structured
