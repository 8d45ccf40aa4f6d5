#include "podresources/server.h"

#include <grpcpp/server_builder.h>

#include <utility>

#include "podresources/server_v1.h"
#include "podresources/server_v1alpha1.h"
#include "podresources/watch_service.h"

namespace devmgr::podresources {

absl::StatusOr<std::unique_ptr<PodResourcesServer>> PodResourcesServer::Create(
    const ServerOptions& options, const Providers& providers, LoggerPtr logger) {
  if (providers.pods == nullptr || providers.devices == nullptr) {
    return absl::InvalidArgumentError("the pods and devices providers are required");
  }
  const Clock& clock = options.clock != nullptr ? *options.clock : MonotonicClock();
  absl::StatusOr<std::unique_ptr<CredentialsListener>> listener =
      CredentialsListener::Listen(options.socket_path, logger);
  if (!listener.ok()) return listener.status();

  std::unique_ptr<PodResourcesServer> server(new PodResourcesServer());
  server->counters_ = std::make_unique<Counters>();
  server->listener_ = *std::move(listener);
  server->gate_ = std::make_unique<ClientGate>(
      options.rate_limit, options.watch.max_streams_per_client, clock, server->listener_.get());
  server->hub_ = std::make_unique<WatchHub>(providers, options.watch, clock, logger);
  server->services_.push_back(std::make_unique<V1Service>(providers, *server->gate_,
                                                          *server->counters_, options.get_enabled));
  server->services_.push_back(
      std::make_unique<V1alpha1Service>(providers, *server->gate_, *server->counters_));
  server->services_.push_back(
      std::make_unique<WatchService>(*server->hub_, *server->gate_, *server->counters_));

  grpc::ServerBuilder builder;
  // No listening port: the credentials listener accepts and hands each connection over.
  for (const auto& service : server->services_) builder.RegisterService(service.get());
  builder.SetMaxSendMessageSize(options.max_send_message_bytes);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr) return absl::UnavailableError("gRPC server did not start");
  server->hub_->Start();
  server->listener_->Start(*server->server_);
  DEVMGR_LOG(logger, info, "Started PodResources server", "socket", options.socket_path.string(),
             "qps", options.rate_limit.qps, "burstTokens", options.rate_limit.burst, "perClient",
             options.rate_limit.per_client);
  return server;
}

PodResourcesServer::~PodResourcesServer() { Shutdown(); }

void PodResourcesServer::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  listener_->Stop();
  hub_->EndAllStreams();
  // Null when Create failed to start gRPC: the destructor still comes here.
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(grace));
    server_->Wait();
  }
  // Streams unsubscribe through the hub's thread; let that finish before anything goes away.
  hub_->Drain();
}

}  // namespace devmgr::podresources
