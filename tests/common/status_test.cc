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
  // Printable ASCII travels as it is: 6144 bytes fit.
  const std::string fits(kMaxStatusMessageBytes, 'x');
  EXPECT_EQ(ToGrpcStatus(absl::InvalidArgumentError(fits)).error_message(), fits);
  const grpc::Status cut = ToGrpcStatus(absl::InvalidArgumentError(fits + "yz"));
  EXPECT_EQ(cut.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(cut.error_message(),
            std::string(kMaxStatusMessageBytes - 40, 'x') + "... (42 more bytes)");
  // Other bytes take three each: 2048 of "é" (two bytes, six encoded) do not fit, and the cut
  // keeps whole characters.
  std::string accented;
  for (int i = 0; i < 2048; ++i) accented += "\xC3\xA9";
  const std::string sent = GrpcStatus(grpc::StatusCode::UNKNOWN, accented).error_message();
  const size_t kept = (kMaxStatusMessageBytes - 40) / 6 * 2;
  EXPECT_EQ(sent, absl::StrCat(accented.substr(0, kept), "... (", accented.size() - kept,
                               " more bytes)"));
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
  // gRPC 1.51 says "CANCELLED" for a call cancelled with TryCancel, others "Cancelled".
  for (const char* cancelled : {"Cancelled", "CANCELLED"}) {
    EXPECT_EQ(FromGrpcCall(grpc::Status(grpc::StatusCode::CANCELLED, cancelled)),
              absl::CancelledError("rpc error: code = Canceled desc = context canceled"));
  }
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
