// CheckJsonDepth and CheckJsonShape: linear scans that refuse JSON nested deeper, or holding
// more values, than a limit before it is parsed. Parsing and freeing deep JSON are iterative in
// nlohmann's library, but copying, comparing and dumping a value recurse once per level: a value a
// million levels deep, a few megabytes of brackets, would overflow the stack.
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace devmgr {

// The depth devmgr reads a Kubernetes API object's JSON to, from the API server or a writer of
// slices: Go's decoder stops at 10,000 levels, and an object of the API nests a few dozen at
// most, opaque parameters included.
inline constexpr int kMaxApiObjectJsonDepth = 1000;

// The most values devmgr reads from one of the node's own JSON state files (the pod and claim
// records, dra_manager_state, the DRA health file): a node's hold far fewer; more come from a
// damaged or hostile file, and would parse to gigabytes.
inline constexpr size_t kMaxStateFileJsonValues = size_t{1} << 22;

// InvalidArgument ("byte N: JSON nested deeper than L levels") when an array or object opens
// more than `max_depth` levels deep outside strings; OK otherwise, whatever else the bytes hold
// (the parser judges the rest).
absl::Status CheckJsonDepth(absl::string_view bytes, int max_depth);

// CheckJsonShape: CheckJsonDepth, and InvalidArgument ("JSON holds more than N values") when
// the document holds more than `max_values` values (counted, as an upper bound, by the arrays
// and objects opened and the commas between members): a file of many tiny values ("0,0,0,...",
// "[[[]]],[[[]]],...") costs a parsed tree some twenty times its size.
absl::Status CheckJsonShape(absl::string_view bytes, int max_depth, size_t max_values);

}  // namespace devmgr
