#include "dra/metrics.h"

#include "absl/strings/str_cat.h"

namespace devmgr::dra {

std::string GrpcMethod(absl::string_view service, absl::string_view method) {
  return absl::StrCat("/k8s.io.kubelet.pkg.apis.dra.", service, "/", method);
}

absl::string_view GrpcCodeName(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return "OK";
    case absl::StatusCode::kCancelled:
      return "Canceled";
    case absl::StatusCode::kUnknown:
      return "Unknown";
    case absl::StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case absl::StatusCode::kDeadlineExceeded:
      return "DeadlineExceeded";
    case absl::StatusCode::kNotFound:
      return "NotFound";
    case absl::StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case absl::StatusCode::kPermissionDenied:
      return "PermissionDenied";
    case absl::StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case absl::StatusCode::kFailedPrecondition:
      return "FailedPrecondition";
    case absl::StatusCode::kAborted:
      return "Aborted";
    case absl::StatusCode::kOutOfRange:
      return "OutOfRange";
    case absl::StatusCode::kUnimplemented:
      return "Unimplemented";
    case absl::StatusCode::kInternal:
      return "Internal";
    case absl::StatusCode::kUnavailable:
      return "Unavailable";
    case absl::StatusCode::kDataLoss:
      return "DataLoss";
    case absl::StatusCode::kUnauthenticated:
      return "Unauthenticated";
    default:
      break;
  }
  return "Unknown";
}

}  // namespace devmgr::dra
