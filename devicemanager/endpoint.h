// Endpoint: the manager's side of one registered device plugin, i.e. one resource served on
// one socket, as ManagerImpl and pod admission see it: the plugin's DevicePluginOptions, its
// ListAndWatch stream (whose snapshots go to EndpointCallbacks), the unary calls of pod
// admission (Allocate, PreStartContainer, GetPreferredAllocation), and the stop time that
// starts the resource's grace period. EndpointFactory makes endpoints; the production ones
// speak gRPC (endpoint_impl.h), tests give the manager in-memory ones.
//
// Stop-time handling is the same for every endpoint and lives here: once stopped, an endpoint
// fails every unary call at once, whatever its implementation.
//
// Lifetime: endpoints are shared (EndpointSharedPtr) between the manager's map and callers in
// the middle of a call. An implementation with a running stream keeps itself alive until it
// hands that reference to OnStreamEnded, so it is never destroyed under a running stream.
//
// Thread-safety: every method is thread-safe. The getters and the stop-time methods take the
// endpoint's own mutex briefly (or none) and may be called under the manager's mutex (lock
// order: manager, then endpoint); an endpoint never calls out while holding its mutex.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "devicemanager/callbacks.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace devmgr::devicemanager {

class Endpoint {
 public:
  // NewStopped is an endpoint restored from the checkpoint: no plugin behind it, no socket,
  // default options, stopped at `stop_time`. Every call fails as for any stopped endpoint.
  static EndpointSharedPtr NewStopped(std::string resource_name, absl::Time stop_time);

  virtual ~Endpoint() = default;
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const std::string& resource_name() const { return resource_name_; }
  // Empty for an endpoint restored from the checkpoint.
  const std::filesystem::path& socket_path() const { return socket_; }
  virtual const v1beta1::DevicePluginOptions& plugin_options() const = 0;

  // StartListAndWatch opens the stream; snapshots and then its end go to the callbacks the
  // factory was given, from the implementation's threads (never inline from this call). Call at
  // most once, on an endpoint made by EndpointFactory::Connect. Never blocks. If CancelStream came
  // first, the stream ends at once (OnStreamEnded still follows).
  virtual void StartListAndWatch() = 0;

  // CancelStream asks the stream to end; OnStreamEnded follows soon if it was started,
  // possibly inline, so the caller must not hold a lock the callbacks take. Idempotent, never
  // blocks.
  virtual void CancelStream() = 0;

  // MarkStopped records `now` as the stop time unless one is set already.
  void MarkStopped(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  bool IsStopped() const ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<absl::Time> stop_time() const ABSL_LOCKS_EXCLUDED(mu_);
  // StopGracePeriodExpired: stopped, and more than `grace` has passed since (strictly, as
  // upstream's stopGracePeriodExpired).
  bool StopGracePeriodExpired(absl::Time now, absl::Duration grace) const ABSL_LOCKS_EXCLUDED(mu_);

  // The unary calls of pod admission. Each blocks the caller for at most its deadline (see
  // the implementation). FailedPrecondition "endpoint <resource> has been stopped" at once on
  // a stopped endpoint; otherwise the plugin's answer or status.
  absl::StatusOr<v1beta1::AllocateResponse> Allocate(const std::vector<std::string>& device_ids);
  absl::StatusOr<v1beta1::PreStartContainerResponse> PreStartContainer(
      const std::vector<std::string>& device_ids);
  absl::StatusOr<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const std::vector<std::string>& available, const std::vector<std::string>& must_include,
      int size);

 protected:
  Endpoint(std::string resource_name, std::filesystem::path socket);

 private:
  // The calls to the plugin behind a live endpoint, made by the public ones above once they
  // have checked that it is not stopped; same contracts otherwise.
  virtual absl::StatusOr<v1beta1::AllocateResponse> DoAllocate(
      const std::vector<std::string>& device_ids) = 0;
  virtual absl::StatusOr<v1beta1::PreStartContainerResponse> DoPreStartContainer(
      const std::vector<std::string>& device_ids) = 0;
  virtual absl::StatusOr<v1beta1::PreferredAllocationResponse> DoGetPreferredAllocation(
      const std::vector<std::string>& available, const std::vector<std::string>& must_include,
      int size) = 0;

  absl::Status StoppedError() const;

  const std::string resource_name_;
  const std::filesystem::path socket_;
  mutable absl::Mutex mu_;
  std::optional<absl::Time> stop_time_ ABSL_GUARDED_BY(mu_);
};

// ConnectLimits bound one Connect. The dial gives up at `dial_deadline`: upstream's one dial
// timeout, counted from the registration, so that waiting for the plugin's socket to appear
// spends it too. Everything gives up soon after `*cancelled` becomes true (when not null).
struct ConnectLimits {
  absl::Time dial_deadline = absl::InfiniteFuture();
  const std::atomic<bool>* cancelled = nullptr;
};

// EndpointFactory makes the endpoint of a plugin that registered (ManagerOptions::
// endpoint_factory; null means the gRPC one of endpoint_impl.h). The manager calls Connect from
// its connect threads and from RegisterPlugin's caller, concurrently.
class EndpointFactory {
 public:
  virtual ~EndpointFactory() = default;

  // Connect reaches the plugin of `resource_name` at `socket` and learns its options. May
  // block (bounded by `limits` and the implementation's own deadlines). The stream is not opened
  // yet (see StartListAndWatch); its snapshots and end will go to `callbacks`, which must outlive
  // it. Errors have upstream's texts ("failed to dial device plugin: ...", "failed to get device
  // plugin options: ...").
  virtual absl::StatusOr<EndpointSharedPtr> Connect(std::string resource_name,
                                                    std::filesystem::path socket,
                                                    EndpointCallbacks& callbacks,
                                                    const ConnectLimits& limits) = 0;
};

}  // namespace devmgr::devicemanager
