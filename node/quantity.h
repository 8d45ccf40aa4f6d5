// Kubernetes resource quantities (resource.Quantity's text form) read as device counts, for the
// Pod manifests the node admits: extended resources such as devices are whole numbers, which
// Kubernetes writes in any of the quantity forms.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr::node {

// ParseDeviceCount reads a Kubernetes quantity ("2", "2000m", "1k", "1e1", "1Ki") as a number
// of devices. InvalidArgument, saying why, for anything that is not a quantity, is negative,
// is not a whole number, or does not fit in 64 bits.
absl::StatusOr<int64_t> ParseDeviceCount(absl::string_view quantity);

}  // namespace devmgr::node
