// TopologyPolicyOptions: the topology manager's policy options, as the kubelet's
// --topology-manager-policy-options gives them (name=value pairs separated by commas):
//   prefer-closest-numa-nodes=BOOL  between affinities of as many nodes, the one whose nodes are
//                                   closest on average (NumaDistances) instead of the lowest
//                                   numbered; not with single-numa-node, whose affinities are one
//                                   node each;
//   max-allowable-numa-nodes=N      the most NUMA nodes a policy other than none accepts on the
//                                   machine (at least 8, upstream's default).
#pragma once

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devicemanager/topology_hints.h"

namespace devmgr::topologymanager {

struct TopologyPolicyOptions {
  bool prefer_closest_numa_nodes = false;
  size_t max_allowable_numa_nodes = devicemanager::kMaxNumaNodesForHints;
};

// ParseTopologyPolicyOptions reads "name=value,..." (empty: the defaults). InvalidArgument with
// upstream's texts for an unknown name ("unknown Topology Manager Policy option: \"x\""), a
// value that is not a boolean or an integer, or a max-allowable-numa-nodes under 8.
absl::StatusOr<TopologyPolicyOptions> ParseTopologyPolicyOptions(absl::string_view text);

}  // namespace devmgr::topologymanager
