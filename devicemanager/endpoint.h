// Endpoint: the manager's side of one registered device plugin, i.e. one resource served on
// one socket. It dials the plugin, keeps its DevicePluginOptions, runs the ListAndWatch stream
// (a gRPC ClientReadReactor that hands each snapshot to EndpointCallbacks), and makes the
// unary calls of pod admission (Allocate, PreStartContainer, GetPreferredAllocation), each
// with a deadline. It also carries the stop time that starts the resource's grace period; a
// stopped endpoint fails every call at once.
//
// Lifetime: endpoints are shared (EndpointSharedPtr) between the manager's map and callers in
// the middle of an RPC. While its stream runs, an endpoint keeps itself alive; it is released
// only after OnStreamEnded, so it is never destroyed under a running reactor.
//
// Thread-safety: every method is thread-safe. The getters and the stop-time methods take the
// endpoint's own mutex briefly and may be called under the manager's mutex (lock order:
// manager, then endpoint); the endpoint never calls out while holding its mutex.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "devicemanager/callbacks.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace devmgr::devicemanager {

// Deadlines and limits for the calls an endpoint makes.
struct EndpointOptions {
  absl::Duration dial_timeout = kDefaultDialTimeout;
  // GetDevicePluginOptions, Allocate and GetPreferredAllocation.
  absl::Duration call_timeout = kDefaultPluginCallTimeout;
  absl::Duration pre_start_timeout = kPreStartContainerTimeout;
  // Largest message accepted from the plugin (a ListAndWatch snapshot).
  int max_message_bytes = kDefaultMaxMessageBytes;
};

class Endpoint;
using EndpointSharedPtr = std::shared_ptr<Endpoint>;

class Endpoint : public std::enable_shared_from_this<Endpoint> {
 public:
  // Connect dials the plugin at `socket` and waits until the connection is up (at most
  // options.dial_timeout), then calls GetDevicePluginOptions (options.call_timeout). Blocks the
  // calling thread for that long at most; both steps are given up soon after `*cancelled`
  // becomes true. The stream is not opened yet: see StartListAndWatch. `callbacks` must outlive the
  // stream. Errors (codes from gRPC, texts as upstream): "failed to dial device plugin: ...",
  // "failed to get device plugin options: ...".
  static absl::StatusOr<EndpointSharedPtr> Connect(std::string resource_name,
                                                   std::filesystem::path socket,
                                                   const EndpointOptions& options,
                                                   EndpointCallbacks& callbacks,
                                                   const std::atomic<bool>* cancelled = nullptr);

  // NewStopped is an endpoint restored from the checkpoint: no plugin behind it, stopped at
  // `stop_time`. Every call fails as for any stopped endpoint.
  static EndpointSharedPtr NewStopped(std::string resource_name, absl::Time stop_time);

  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const std::string& resource_name() const { return resource_name_; }
  // Empty for an endpoint restored from the checkpoint.
  const std::filesystem::path& socket_path() const { return socket_; }
  const v1beta1::DevicePluginOptions& plugin_options() const { return plugin_options_; }

  // StartListAndWatch opens the stream; snapshots and then its end go to the callbacks given
  // to Connect, from gRPC threads. Call at most once, on a connected endpoint. Never blocks.
  // If CancelStream came first, the stream ends at once (OnStreamEnded still follows).
  void StartListAndWatch();

  // CancelStream asks the stream to end; OnStreamEnded follows soon if it was started.
  // Idempotent, never blocks.
  void CancelStream();

  // MarkStopped records `now` as the stop time unless one is set already.
  void MarkStopped(absl::Time now);
  bool IsStopped() const;
  std::optional<absl::Time> stop_time() const;
  // StopGracePeriodExpired: stopped, and more than `grace` has passed since (strictly, as
  // upstream's stopGracePeriodExpired).
  bool StopGracePeriodExpired(absl::Time now, absl::Duration grace) const;

  // The unary calls of pod admission. Each blocks the caller for at most its deadline
  // (call_timeout; pre_start_timeout for PreStartContainer). FailedPrecondition
  // "endpoint <resource> has been stopped" on a stopped endpoint; otherwise the gRPC status.
  absl::StatusOr<v1beta1::AllocateResponse> Allocate(const std::vector<std::string>& device_ids);
  absl::StatusOr<v1beta1::PreStartContainerResponse> PreStartContainer(
      const std::vector<std::string>& device_ids);
  absl::StatusOr<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const std::vector<std::string>& available, const std::vector<std::string>& must_include,
      int size);

 private:
  class StreamReactor;

  Endpoint(std::string resource_name, std::filesystem::path socket);
  absl::Status StoppedError() const;

  const std::string resource_name_;
  const std::filesystem::path socket_;
  EndpointOptions options_;
  // Set once by Connect, before the endpoint is shared; read-only afterwards.
  v1beta1::DevicePluginOptions plugin_options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  EndpointCallbacks* callbacks_ = nullptr;
  std::unique_ptr<StreamReactor> reactor_;

  mutable absl::Mutex mu_;
  std::optional<absl::Time> stop_time_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::devicemanager
