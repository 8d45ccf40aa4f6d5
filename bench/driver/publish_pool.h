// The pool the publishing measurements publish, shared by `devmgr bench` (step dra) and
// bench/publish_bench: `devices` devices "gpu-<i>" (attributes model "a100" and index i, 80Gi of
// memory) in slices of 128, as drivers publish them, in one pool named after the node.
#pragma once

#include <string>

#include "resourceslice/driver_resources.h"

namespace devmgr::bench {

inline constexpr int kPublishedDevicesPerSlice = 128;

resourceslice::DriverResources PublishedPool(int devices, const std::string& node);

}  // namespace devmgr::bench
