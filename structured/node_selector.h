// Node selection: whether a core/v1 NodeSelector picks a node, as the scheduler's nodeaffinity
// helper decides it (terms ORed; in a term, matchExpressions on labels and matchFields on
// metadata.name ANDed; a term with neither matches nothing), and the node an allocation is for.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace devmgr::structured {

// The node allocation runs for: its name and labels (what node selectors look at).
struct Node {
  std::string name;
  std::map<std::string, std::string> labels;
};

// NodeSelectorMatches: InvalidArgument for a selector that does not parse (an unknown operator,
// In/NotIn without values, Gt/Lt without one integer, a field other than metadata.name), with
// the requirement's path in the text.
absl::StatusOr<bool> NodeSelectorMatches(const nlohmann::json& selector, const Node& node);

// NodeMatches: upstream's NodeMatches: a node name (only that node), all nodes, or a selector;
// none of them matches no node.
absl::StatusOr<bool> NodeMatches(const Node& node, const std::string& node_name, bool all_nodes,
                                 const nlohmann::json* selector);

}  // namespace devmgr::structured
