// GatherPools: the resource pools a node can allocate from, as upstream's GatherPools finds them:
// the slices that reach the node (by node name, all nodes, a node selector, or per device; a
// slice of shared counters reaches every node while only upstream's stable gates are on, as in
// its stable allocator, and is selected by node otherwise, as in its newer ones), grouped by
// driver and pool, only the newest generation of each pool; a pool whose slices are not all
// there is incomplete, one with duplicate device names or broken counter references is invalid,
// and neither is allocated from.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "structured/device.h"
#include "structured/feature_gates.h"
#include "structured/node_selector.h"

namespace devmgr::structured {

struct PoolID {
  std::string driver;
  std::string pool;

  bool operator==(const PoolID&) const = default;
  std::string ToString() const { return driver + "/" + pool; }
};

struct Pool {
  PoolID id;
  bool incomplete = false;
  bool invalid = false;
  std::string invalid_reason;
  // The slices with devices that reach the node, by name.
  std::vector<std::shared_ptr<const SliceInfo>> slices_targeting_node;
  // The pool's other device slices (partitionable devices: they share its counters).
  std::vector<std::shared_ptr<const SliceInfo>> slices_not_targeting_node;
  // The pool's shared counter sets by name.
  std::map<std::string, Counters> counter_sets;
};

// GatherPools: pools sorted by driver and pool name (those with binding conditions last), each
// pool's slices by name, as upstream sorts them so that the first-fit search is deterministic
// whatever order the slices come in. An error only for a node selector that does not parse.
absl::StatusOr<std::vector<Pool>> GatherPools(
    const std::vector<std::shared_ptr<const SliceInfo>>& slices, const Node& node,
    const Features& features);

}  // namespace devmgr::structured
