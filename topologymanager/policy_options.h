// TopologyPolicyOptions: the topology manager's policy options, as the kubelet's
// --topology-manager-policy-options gives them (name=value pairs separated by commas, the flag
// given any number of times):
//   prefer-closest-numa-nodes=BOOL  between affinities of as many nodes, the one whose nodes are
//                                   closest on average (NumaDistances) instead of the lowest
//                                   numbered; not with single-numa-node, whose affinities are one
//                                   node each;
//   max-allowable-numa-nodes=N      the most NUMA nodes a policy other than none accepts on the
//                                   machine (at least 8, upstream's default).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devicemanager/topology_hints.h"

namespace devmgr::topologymanager {

struct TopologyPolicyOptions {
  bool prefer_closest_numa_nodes = false;
  size_t max_allowable_numa_nodes = devicemanager::kMaxNumaNodesForHints;
};

// ParseOptionPairs reads the flag's values as the kubelet's map flag does: each split at commas,
// empty parts skipped, each part "name=value" with blanks around both trimmed, a later value of
// a name replacing an earlier one. "malformed pair, expect string=string" for a part without '='.
absl::StatusOr<std::map<std::string, std::string>> ParseOptionPairs(
    const std::vector<std::string>& values);

// NewTopologyPolicyOptions checks the pairs as the kubelet does for a policy other than none
// (it ignores them under none), with its texts: "unknown Topology Manager Policy option: \"x\"",
// a value Go's strconv.ParseBool or strconv.Atoi refuses (their error wrapped), or a
// max-allowable-numa-nodes under 8.
absl::StatusOr<TopologyPolicyOptions> NewTopologyPolicyOptions(
    const std::map<std::string, std::string>& pairs);

}  // namespace devmgr::topologymanager
