// Conversions between absl::Status and grpc::Status, and the text grpc-go prints for a failed
// call (upstream's "rpc error: code = ... desc = ..."), which the kubelet's errors carry.
#include "common/status.h"

#include <gtest/gtest.h>

namespace devmgr {
namespace {

TEST(StatusTest, ConversionsKeepTheCodeAndTheMessage) {
  const grpc::Status unavailable(grpc::StatusCode::UNAVAILABLE, "gone");
  EXPECT_EQ(FromGrpcStatus(unavailable), absl::UnavailableError("gone"));
  const grpc::Status back = ToGrpcStatus(absl::UnavailableError("gone"));
  EXPECT_EQ(back.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(back.error_message(), "gone");
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

// A message longer than a client takes in its metadata is cut, at a character's boundary, and
// says how much was left out; the code stays. Before, a 20 KB pod name in an error made clients
// see "received initial metadata size exceeds limit" (RESOURCE_EXHAUSTED) instead.
TEST(StatusTest, AMessageTooLongForTheClientIsCut) {
  const std::string fits(kMaxStatusMessageBytes, 'x');
  EXPECT_EQ(ToGrpcStatus(absl::InvalidArgumentError(fits)).error_message(), fits);
  const grpc::Status cut = ToGrpcStatus(absl::InvalidArgumentError(fits + "yz"));
  EXPECT_EQ(cut.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(cut.error_message(), fits + "... (2 more bytes)");
  // "é" (two bytes) across the limit is kept out whole.
  const std::string accented = std::string(kMaxStatusMessageBytes - 1, 'x') + "\xC3\xA9z";
  EXPECT_EQ(GrpcStatus(grpc::StatusCode::UNKNOWN, accented).error_message(),
            std::string(kMaxStatusMessageBytes - 1, 'x') + "... (3 more bytes)");
}

TEST(StatusTest, ACallsErrorReadsAsGrpcGoPrintsIt) {
  EXPECT_EQ(FromGrpcCall(grpc::Status(grpc::StatusCode::UNKNOWN, "plugin broke")),
            absl::UnknownError("rpc error: code = Unknown desc = plugin broke"));
  // The call's own deadline and cancellation (gRPC C++'s texts for them) read as a Go
  // context's: upstream's TestPrepareResources "should timeout" gets
  // "NodePrepareResources: rpc error: code = DeadlineExceeded desc = context deadline exceeded".
  EXPECT_EQ(FromGrpcCall(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded")),
            absl::DeadlineExceededError(
                "rpc error: code = DeadlineExceeded desc = context deadline exceeded"));
  EXPECT_EQ(FromGrpcCall(grpc::Status(grpc::StatusCode::CANCELLED, "Cancelled")),
            absl::CancelledError("rpc error: code = Canceled desc = context canceled"));
  // An answer gRPC C++ could not parse is an internal error, as grpc-go's; before, a plugin's
  // Allocate answer with an env key that is not UTF-8 read "Unimplemented desc = No message
  // returned for unary request".
  EXPECT_EQ(FromGrpcCall(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                      "No message returned for unary request")),
            absl::InternalError("rpc error: code = Internal desc = grpc: failed to unmarshal the "
                                "received message (not a valid protobuf message, or a string "
                                "field that is not UTF-8)"));
  // A server's own text for those codes is kept.
  EXPECT_EQ(
      FromGrpcCall(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "driver gave up")),
      absl::DeadlineExceededError("rpc error: code = DeadlineExceeded desc = driver gave up"));
  EXPECT_EQ(FromGrpcCall(grpc::Status(grpc::StatusCode::UNAVAILABLE, "")),
            absl::UnavailableError("rpc error: code = Unavailable desc = "));
  EXPECT_TRUE(FromGrpcCall(grpc::Status::OK).ok());
}

// Go's codes.Code names, as its String() prints them (Canceled with one "l").
TEST(StatusTest, CodeNamesAreGosCodeNames) {
  EXPECT_EQ(GoCodeName(absl::StatusCode::kOk), "OK");
  EXPECT_EQ(GoCodeName(absl::StatusCode::kCancelled), "Canceled");
  EXPECT_EQ(GoCodeName(absl::StatusCode::kInvalidArgument), "InvalidArgument");
  EXPECT_EQ(GoCodeName(absl::StatusCode::kResourceExhausted), "ResourceExhausted");
  EXPECT_EQ(GoCodeName(absl::StatusCode::kUnauthenticated), "Unauthenticated");
  EXPECT_EQ(GoCodeName(static_cast<absl::StatusCode>(17)), "Code(17)");
}

}  // namespace
}  // namespace devmgr
