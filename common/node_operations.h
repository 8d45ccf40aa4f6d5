// The node operations a DRA driver's ResourceSlice may say its devices need not have
// (resourceapi.SkipNodeOperation, feature gate DRAOptionalNodeOperations, KEP-5945): the slice's
// spec.skipNodeOperations, copied into each allocated device's result, tells the kubelet which
// of the driver's gRPC calls to leave out. Shared by the API types, the allocator and the node's
// DRA manager.
#pragma once

#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/string_view.h"

namespace devmgr {

inline constexpr char kSkipNodePrepareResources[] = "NodePrepareResources";
inline constexpr char kSkipNodeUnprepareResources[] = "NodeUnprepareResources";
inline constexpr char kSkipAllNodeOperations[] = "*";

// SkipsNodeOperation: `operations` (a skipNodeOperations list) names `operation`, or "*".
// Values it does not know are a newer API's and are ignored, as the kubelet must.
inline bool SkipsNodeOperation(const std::vector<std::string>& operations,
                               absl::string_view operation) {
  return absl::c_linear_search(operations, operation) ||
         absl::c_linear_search(operations, kSkipAllNodeOperations);
}

}  // namespace devmgr
