// PodResourcesServer: the PodResources endpoint of a node, on one unix socket: the upstream
// v1.PodResourcesLister and v1alpha1.PodResourcesLister services, exactly as a kubelet serves
// them, and devmgr's PodResourcesWatcher beside them. Rate limits, message size limits and the
// Watch policy are set here. In the daemon the socket is <root>/pod-resources/kubelet.sock;
// an embedding host may use any path.
//
//   podresources::Providers providers{&pods, &devices_adapter};
//   auto server = podresources::PodResourcesServer::Create(options, providers, logger);
//   ... (*server)->notifier().PodUpdated(pod);   // after admitting a pod
//   (*server)->Shutdown();
#pragma once

#include <grpcpp/server.h>

#include <filesystem>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/logging.h"
#include "podresources/client_gate.h"
#include "podresources/metrics.h"
#include "podresources/peer_credentials.h"
#include "podresources/providers.h"
#include "podresources/rate_limiter.h"
#include "podresources/watch_hub.h"

namespace devmgr::podresources {

struct ServerOptions {
  std::filesystem::path socket_path;
  RateLimitOptions rate_limit;
  // Largest response the server sends; -1: no limit (gRPC's default for servers). Responses
  // far beyond 4 MiB are fine; clients must raise their receive limit to read them.
  int max_send_message_bytes = -1;
  // Plays upstream's KubeletPodResourcesGet gate (beta, on by default since Kubernetes 1.34).
  bool get_enabled = true;
  WatchOptions watch;
  // Not owned; must outlive the server. Null: MonotonicClock().
  const Clock* clock = nullptr;
};

class PodResourcesServer {
 public:
  // Create binds the socket and starts serving. `providers.pods` and `providers.devices` are
  // required; every provider must outlive the server. InvalidArgument for a bad socket path or
  // missing provider, FailedPrecondition if something that is not a socket is in the way.
  static absl::StatusOr<std::unique_ptr<PodResourcesServer>> Create(const ServerOptions& options,
                                                                    const Providers& providers,
                                                                    LoggerPtr logger);
  // Shuts down if still running.
  ~PodResourcesServer();
  PodResourcesServer(const PodResourcesServer&) = delete;
  PodResourcesServer& operator=(const PodResourcesServer&) = delete;

  // notifier: what the host calls on pod changes (feeds Watch). Thread-safe, never blocks.
  PodResourcesNotifier& notifier() { return *hub_; }

  // Shutdown stops accepting connections, ends open Watch streams (UNAVAILABLE "server
  // shutting down"), waits up to `grace` for calls in flight and cancels what remains. Blocks;
  // idempotent; not from a gRPC thread.
  void Shutdown(absl::Duration grace = absl::Seconds(1));

  // counters: request and error counts per method and version. Thread-safe.
  const Counters& counters() const { return *counters_; }

  // The hub, for tests that need to wait for it.
  WatchHub& hub_for_test() { return *hub_; }

 private:
  PodResourcesServer() = default;

  // Declaration order is lifetime order: the services use everything declared before them,
  // and the gRPC server (which runs them) is destroyed first.
  std::unique_ptr<Counters> counters_;
  std::unique_ptr<CredentialsListener> listener_;
  std::unique_ptr<ClientGate> gate_;
  std::unique_ptr<WatchHub> hub_;
  std::vector<std::unique_ptr<grpc::Service>> services_;
  std::unique_ptr<grpc::Server> server_;
  bool shut_down_ = false;
};

}  // namespace devmgr::podresources
