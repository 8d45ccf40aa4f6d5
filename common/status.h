// Conversions between absl::Status and grpc::Status. The canonical codes are numerically the
// same in both, so only the representation changes; and the text a Go program's gRPC prints for
// a failed call, which the kubelet's messages carry.
#pragma once

#include <grpcpp/support/status.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace devmgr {

// The most bytes a failed call's message may take as it travels: percent-encoded (a byte
// outside printable ASCII, or '%', takes three) in the call's metadata, which gRPC clients
// refuse over 8 KiB; past it, a client sees "received initial metadata size exceeds limit"
// instead of the error. The rest of the 8 KiB is left to the other headers.
inline constexpr size_t kMaxStatusMessageBytes = 6144;

// GrpcStatus: the status a server sends, its message cut (at a character's boundary) with
// "... (N more bytes)" where it would take more than kMaxStatusMessageBytes encoded: a pod
// name, a plugin's error or a resource name a client or plugin chose can make it so.
grpc::Status GrpcStatus(grpc::StatusCode code, absl::string_view message);

// ToGrpcStatus: GrpcStatus of an absl::Status.
grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

// GoCodeName: the code as Go's codes.Code prints it ("OK", "DeadlineExceeded", ...; "Code(17)"
// for a code gRPC does not define).
std::string GoCodeName(absl::StatusCode code);

// FromGrpcCall: a failed call's status with the text grpc-go's client error prints,
// "rpc error: code = <GoCodeName> desc = <message>" (the kubelet wraps that text into its own
// errors), the code kept; OK stays OK. The call's own deadline and cancellation read "context
// deadline exceeded" and "context canceled", as grpc-go's.
absl::Status FromGrpcCall(const grpc::Status& status);

}  // namespace devmgr
