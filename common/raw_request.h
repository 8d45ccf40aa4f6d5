// ParseRawRequest: for a gRPC method served in its raw form (bytes in, bytes out), which must
// read its request itself. The request must parse even when its message has no fields; one that
// does not is refused with INTERNAL, as a Go server's gRPC refuses it (gRPC C++'s typed methods
// would answer with an empty UNIMPLEMENTED).
#pragma once

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/status.h>

namespace devmgr {

template <typename Request>
grpc::Status ParseRawRequest(const grpc::ByteBuffer& request) {
  grpc::ByteBuffer bytes(request);  // shares the slices; Deserialize consumes its argument
  Request parsed;
  return grpc::SerializationTraits<Request>::Deserialize(&bytes, &parsed);
}

}  // namespace devmgr
