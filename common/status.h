// Conversions between absl::Status and grpc::Status. The canonical codes are numerically the
// same in both, so only the representation changes.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace devmgr {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace devmgr
