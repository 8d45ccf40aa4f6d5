// The machine's NUMA nodes, which the kubelet's topology manager generates hints over and whose
// full set single-numa-node turns into "no affinity": read from sysfs as the kernel lists them
// (/sys/devices/system/node/online, a list such as "0" or "0-3,5"), or given by the operator
// in the same form.
#pragma once

#include <filesystem>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr::topologymanager {

// Where the kernel lists the NUMA nodes that are online.
inline constexpr char kOnlineNumaNodes[] = "/sys/devices/system/node/online";

// ParseNumaNodeList reads a node list: node IDs and ranges ("2-5") separated by commas, blanks
// around them and a final newline allowed. Sorted, each node once. InvalidArgument, naming the
// part at fault, for an empty list, a node outside 0..63 (what a NUMA mask holds) or a range
// that runs backwards.
absl::StatusOr<std::vector<int>> ParseNumaNodeList(absl::string_view text);

// ReadNumaNodeList: ParseNumaNodeList of the file at `path`; the error names the file.
absl::StatusOr<std::vector<int>> ReadNumaNodeList(
    const std::filesystem::path& path = kOnlineNumaNodes);

}  // namespace devmgr::topologymanager
