#include "common/status.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace devmgr {

grpc::Status GrpcStatus(grpc::StatusCode code, absl::string_view message) {
  // Room for the note of what was cut, which is plain ASCII.
  constexpr size_t kNoteBytes = 40;
  size_t encoded = 0;
  size_t kept = 0;  // the bytes that fit with the note
  for (size_t i = 0; i < message.size(); ++i) {
    const auto byte = static_cast<unsigned char>(message[i]);
    encoded += byte < 0x20 || byte > 0x7E || byte == '%' ? 3 : 1;
    if (encoded <= kMaxStatusMessageBytes - kNoteBytes) kept = i + 1;
  }
  if (encoded <= kMaxStatusMessageBytes) return grpc::Status(code, std::string(message));
  kept = Utf8CutPoint(message, kept);
  return grpc::Status(
      code, absl::StrCat(message.substr(0, kept), "... (", message.size() - kept, " more bytes)"));
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return GrpcStatus(static_cast<grpc::StatusCode>(status.code()), status.message());
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::string GoCodeName(absl::StatusCode code) {
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
  return absl::StrCat("Code(", static_cast<int>(code), ")");
}

absl::Status FromGrpcCall(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  auto code = static_cast<absl::StatusCode>(status.error_code());
  // gRPC C++'s typed call answers an answer it could not parse (a string field that is not
  // UTF-8, bytes that are no message) so, as if the server had sent none; grpc-go calls it an
  // internal error of its own.
  if (code == absl::StatusCode::kUnimplemented &&
      status.error_message() == "No message returned for unary request") {
    return absl::InternalError(
        "rpc error: code = Internal desc = grpc: failed to unmarshal the received message (not "
        "a valid protobuf message, or a string field that is not UTF-8)");
  }
  // The caller's own deadline and cancellation, in the words of the Go context that carries
  // them in grpc-go.
  std::string desc = status.error_message();
  if (code == absl::StatusCode::kDeadlineExceeded && desc == "Deadline Exceeded") {
    desc = "context deadline exceeded";
  } else if (code == absl::StatusCode::kCancelled && (desc == "Cancelled" || desc == "CANCELLED")) {
    desc = "context canceled";
  }
  return absl::Status(code, absl::StrCat("rpc error: code = ", GoCodeName(code), " desc = ", desc));
}

}  // namespace devmgr
