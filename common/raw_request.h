// ParseRawRequest: for a gRPC method served in its raw form (bytes in, bytes out), which must
// read its request itself. The request must parse even when its message has no fields; one that
// does not is refused with INTERNAL, as a Go server's gRPC refuses it (gRPC C++'s typed methods
// would answer with an empty UNIMPLEMENTED).
#pragma once

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>
#include <grpcpp/support/status.h>

namespace devmgr {

// `parsed` receives the request.
template <typename Request>
grpc::Status ParseRawRequest(const grpc::ByteBuffer& request, Request& parsed) {
  grpc::ByteBuffer bytes(request);  // shares the slices; Deserialize consumes its argument
  return grpc::SerializationTraits<Request>::Deserialize(&bytes, &parsed);
}

// For a request whose fields the method does not read.
template <typename Request>
grpc::Status ParseRawRequest(const grpc::ByteBuffer& request) {
  Request parsed;
  return ParseRawRequest(request, parsed);
}

// SerializeRawAnswer: `answer`'s bytes into `out`, for a raw method's response.
template <typename Answer>
grpc::Status SerializeRawAnswer(const Answer& answer, grpc::ByteBuffer& out) {
  bool own_buffer = false;
  return grpc::SerializationTraits<Answer>::Serialize(answer, &out, &own_buffer);
}

}  // namespace devmgr
