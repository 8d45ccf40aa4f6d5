// RawCall: a unary gRPC call by method path with the request's bytes as given, for tests of
// what a server answers to bytes no typed stub would send.
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"

namespace devmgr::testing {

// The status, and the answer's bytes as they came.
struct RawAnswer {
  grpc::Status status;
  std::string bytes;
};

inline RawAnswer RawCall(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                         const std::string& request_bytes) {
  grpc::GenericStub stub(channel);
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  // A server that never answers fails the call, not the whole test binary.
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  absl::Notification done;
  RawAnswer answer;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                 [&](grpc::Status result) {
                   answer.status = std::move(result);
                   done.Notify();
                 });
  done.WaitForNotification();
  std::vector<grpc::Slice> slices;
  if (answer.status.ok() && response.Dump(&slices).ok()) {
    for (const grpc::Slice& piece : slices) {
      answer.bytes.append(reinterpret_cast<const char*>(piece.begin()), piece.size());
    }
  }
  return answer;
}

}  // namespace devmgr::testing
