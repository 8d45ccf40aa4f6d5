// HealthStream: the kubelet's side of a DRA driver's DRAResourceHealth service (KEP-4680) for one
// registered endpoint, as upstream runs it in pkg/kubelet/cm/dra/plugin (the health stream of a
// plugin) and HandleWatchResourcesStream: a thread keeps a NodeWatchResources stream open,
// hands every message it receives to the host, reports each end of the stream (upstream then
// forgets the driver's health: HealthCache::ClearDriver) and opens it again after the retry
// period (5 s) until stopped. A driver that answers Unimplemented does not serve the service:
// the stream is not tried again.
//
// Which version to speak comes from the driver's registration: PickHealthService chooses the
// newest one both sides know, or none (then no HealthStream is made). The v1alpha1 messages are
// those of v1; the host always receives v1 messages.
//
// Also here: the conversion of a report into the cache's terms (upstream's buildDeviceHealth).
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "dra-health/v1/api.pb.h"
#include "dra/health_cache.h"

namespace devmgr::dra {

// The generated code of the DRA health API, version v1 (proto/dra-health/v1; the wire package is
// a bare "v1").
namespace healthapi = ::v1;

// The gRPC service names a driver lists in its registration's supported_versions.
inline constexpr char kDraResourceHealthServiceV1[] = "v1.DRAResourceHealth";
inline constexpr char kDraResourceHealthServiceV1alpha1[] = "v1alpha1.DRAResourceHealth";

// How long after a stream ends it is opened again (upstream's 5 s).
inline constexpr absl::Duration kHealthStreamRetryPeriod = absl::Seconds(5);

// PickHealthService: the newest health service in `supported_versions` that we speak (v1, then
// v1alpha1), or "" when the driver advertises none: it reports no health.
std::string PickHealthService(const std::vector<std::string>& supported_versions);

// ToDeviceHealthStatus maps the wire's health (UNKNOWN, or a value this version does not know,
// reads Unknown).
DeviceHealthStatus ToDeviceHealthStatus(healthapi::HealthStatus health);

// BuildDeviceHealth turns one device of a report into the cache's terms: the timeout is the
// driver's when positive, else kDefaultHealthTimeout (a negative one is logged). The message is
// kept as sent (claim_health.h cuts it for the pod status).
DeviceHealth BuildDeviceHealth(const healthapi::DeviceHealth& device,
                               absl::string_view driver_name = "",
                               const LoggerPtr& logger = nullptr);

// BuildDeviceHealths: BuildDeviceHealth of every device of `response`, in its order.
std::vector<DeviceHealth> BuildDeviceHealths(const healthapi::NodeWatchResourcesResponse& response,
                                             absl::string_view driver_name = "",
                                             const LoggerPtr& logger = nullptr);

// How one stream ended.
struct HealthStreamEnd {
  // The stream's final status: Cancelled when Stop ended it, Unavailable when the driver was
  // not there or went away, OK when the driver closed it.
  absl::Status status;
  // The driver answered (a message came, or the call got a status other than Unavailable): a
  // stream that never opened carried no news, and upstream clears nothing for it.
  bool established = false;
  // Messages received on this stream.
  int64_t responses = 0;
};

struct HealthStreamOptions {
  // For logs.
  std::string driver_name;
  // The driver's service socket (a unix path), dialled when `channel` is null.
  std::string endpoint;
  // The channel of the endpoint to reuse (upstream opens one connection per endpoint for all of
  // its calls); null makes one for `endpoint`.
  std::shared_ptr<grpc::Channel> channel;
  // kDraResourceHealthServiceV1 or kDraResourceHealthServiceV1alpha1 (see PickHealthService).
  std::string service = kDraResourceHealthServiceV1;
  // Pause between the end of a stream and the next try.
  absl::Duration retry_period = kHealthStreamRetryPeriod;
  // Called on the stream's thread with each message, in order. May block for a while (the next
  // message waits); must not call Stop.
  std::function<void(const healthapi::NodeWatchResourcesResponse&)> on_response;
  // Called on the stream's thread once after each try, however it ended (a Stop that comes
  // between tries makes none, and StopQuietly none at all); the last call comes before Stop
  // returns. Must not call Stop.
  std::function<void(const HealthStreamEnd&)> on_stream_end;
  LoggerPtr logger;
};

class HealthStream {
 public:
  // Starts the thread, which opens the first stream at once.
  explicit HealthStream(HealthStreamOptions options);
  // Stops.
  ~HealthStream();
  HealthStream(const HealthStream&) = delete;
  HealthStream& operator=(const HealthStream&) = delete;

  // Stop cancels the open stream (or the pause between tries) and joins the thread: no callback
  // runs after it returns. Idempotent. Must not be called from a callback.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // StopQuietly: Stop without reporting the stream's end, for the owner's shutdown: the health
  // the driver reported stays what it was (the kubelet's file outlives its stop too).
  void StopQuietly() ABSL_LOCKS_EXCLUDED(mu_);

  // Tries: how many streams were opened so far.
  int64_t tries() const ABSL_LOCKS_EXCLUDED(mu_);
  // Finished: the thread has stopped trying (Stop, or the driver answered Unimplemented).
  bool finished() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // RunOnce opens one stream and reads it to its end; std::nullopt when Stop came first.
  std::optional<HealthStreamEnd> RunOnce() ABSL_LOCKS_EXCLUDED(mu_);
  template <typename Stub, typename Response>
  std::optional<HealthStreamEnd> ReadStream(Stub& stub) ABSL_LOCKS_EXCLUDED(mu_);

  const HealthStreamOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool quiet_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  int64_t tries_ ABSL_GUARDED_BY(mu_) = 0;
  // The context of the open stream, for Stop to cancel; null between streams.
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Last: joined first, while everything it uses is still there.
  std::thread thread_;
};

}  // namespace devmgr::dra
