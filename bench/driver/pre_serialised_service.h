// PreSerialisedService: a bare gRPC callback server's answer to any unary call, with bytes
// serialised once in advance. It is the floor of a read-only RPC: what gRPC, the socket and
// the client's decoding cost when the server does no work at all. Used by `devmgr bench` and
// bench/podresources_bench.cc.
#pragma once

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/support/byte_buffer.h>

#include <string>

namespace devmgr::bench {

class PreSerialisedService final : public grpc::CallbackGenericService {
 public:
  // Every call, whatever its method, reads one request and is answered with `bytes`.
  explicit PreSerialisedService(const std::string& bytes);

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override;

 private:
  grpc::ByteBuffer response_;
};

}  // namespace devmgr::bench
