// BareServer: PreSerialisedService on its own socket, with a channel to it. The floor of a
// read-only PodResources call: the same answer over the same kind of socket, from a server that
// does no work at all.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/server.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "bench/driver/pre_serialised_service.h"

namespace devmgr::bench {

class BareServer {
 public:
  // Start serves `bytes` as the answer to every call on the unix socket `socket` and dials it.
  static absl::StatusOr<std::unique_ptr<BareServer>> Start(const std::filesystem::path& socket,
                                                           const std::string& bytes);
  // Drops the channel, then shuts the server down, giving calls in flight a second.
  ~BareServer();
  BareServer(const BareServer&) = delete;
  BareServer& operator=(const BareServer&) = delete;

  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

 private:
  explicit BareServer(const std::string& bytes) : service_(bytes) {}

  // Declared before the server that serves it, so that it outlives the server.
  PreSerialisedService service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace devmgr::bench
