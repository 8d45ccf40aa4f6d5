#include "bench/driver/bare_server.h"

#include <grpcpp/grpcpp.h>

#include "absl/time/time.h"
#include "common/unix_socket.h"
#include "podresources/client.h"

namespace devmgr::bench {

absl::StatusOr<std::unique_ptr<BareServer>> BareServer::Start(const std::filesystem::path& socket,
                                                              const std::string& bytes) {
  std::unique_ptr<BareServer> bare(new BareServer(bytes));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(socket), grpc::InsecureServerCredentials());
  builder.RegisterCallbackGenericService(&bare->service_);
  bare->server_ = builder.BuildAndStart();
  if (bare->server_ == nullptr) return absl::InternalError("the bare server did not start");
  auto channel = podresources::Dial({socket});
  if (!channel.ok()) return channel.status();
  bare->channel_ = *channel;
  return bare;
}

BareServer::~BareServer() {
  channel_.reset();
  if (server_ != nullptr) server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
}

}  // namespace devmgr::bench
