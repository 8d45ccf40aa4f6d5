// ParseFeatureGateList: a --feature-gates value read as Kubernetes components read theirs
// (component-base's featureGate.Set), so that a kubelet's flag value works here unchanged.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr {

// ParseFeatureGateList: "NAME=BOOL,...": items split at commas (empty ones skipped), each at its
// first '=', name and value trimmed of white space, the value as Go's strconv.ParseBool reads
// it (true, True, 1, t, ...). The gates in the order given; the names are not checked.
// InvalidArgument with upstream's texts: "missing bool value for NAME", "invalid value of
// NAME=VALUE, err: strconv.ParseBool: parsing "VALUE": invalid syntax".
absl::StatusOr<std::vector<std::pair<std::string, bool>>> ParseFeatureGateList(
    absl::string_view text);

}  // namespace devmgr
