// The machine's NUMA nodes, which the kubelet's topology manager generates hints over and whose
// full set single-numa-node turns into "no affinity": read from sysfs as the kernel lists them
// (/sys/devices/system/node/online, a list such as "0" or "0-3,5"), or given by the operator
// in the same form. And the distances between them (nodeN/distance), by which the policy
// option prefer-closest-numa-nodes picks between affinities of as many nodes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devicemanager/numa_mask.h"

namespace devmgr::topologymanager {

// Where the kernel describes the NUMA nodes, and where it lists those that are online.
inline constexpr char kNumaNodeDir[] = "/sys/devices/system/node";
inline constexpr char kOnlineNumaNodes[] = "/sys/devices/system/node/online";

// ParseNumaNodeList reads a node list: node IDs and ranges ("2-5") separated by commas, blanks
// around them and a final newline allowed. Sorted, each node once. InvalidArgument, naming the
// part at fault, for an empty list, a node outside 0..63 (what a NUMA mask holds) or a range
// that runs backwards.
absl::StatusOr<std::vector<int>> ParseNumaNodeList(absl::string_view text);

// ReadNumaNodeList: ParseNumaNodeList of the file at `path`; the error names the file.
absl::StatusOr<std::vector<int>> ReadNumaNodeList(
    const std::filesystem::path& path = kOnlineNumaNodes);

// NumaDistances: the relative distance from one NUMA node to another, as the kernel gives them
// (10 from a node to itself by convention).
class NumaDistances {
 public:
  void Set(int from, int to, uint64_t distance) { distances_[{from, to}] = distance; }
  // The mean distance over every ordered pair of the mask's nodes, each node with itself
  // included (upstream's CalculateAverageFor); 0 for an empty mask, and a pair never set counts
  // as 0.
  double AverageFor(const devicemanager::NumaMask& mask) const;

 private:
  std::map<std::pair<int, int>, uint64_t> distances_;
};

// ReadNumaDistances reads `node_dir`/nodeN/distance for each of `nodes`: one distance for each
// online node (`node_dir`/online) in order, separated by blanks. The error names the file.
absl::StatusOr<NumaDistances> ReadNumaDistances(
    const std::vector<int>& nodes, const std::filesystem::path& node_dir = kNumaNodeDir);

}  // namespace devmgr::topologymanager
