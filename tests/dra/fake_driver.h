// FakeDriver: the service side of a DRA driver for tests, a gRPC server on a unix socket that
// serves DRAPlugin v1, v1beta1 or both. Each call is answered by a function the test sets
// (by default every claim is prepared with no devices, or unprepared); calls are counted and
// the requests kept. The answer functions run on gRPC's threads and may block, e.g. until the
// test lets them go on.
//
// With Options::serve_health_v1 / serve_health_v1alpha1 it also serves DRAResourceHealth:
// every NodeWatchResources stream gets the last report pushed (if any) at once and each report
// pushed later (PushHealth); EndHealthStreams closes the open streams with a status, and
// Options::health_status makes every stream end with that status at once (Unimplemented: a
// driver that registers the service without serving it).
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "dra-health/v1/api.pb.h"
#include "dra/v1/api.pb.h"

namespace devmgr::testing {

namespace draapi = ::k8s::io::kubelet::pkg::apis::dra;

class FakeDriver {
 public:
  using PrepareFn = std::function<draapi::v1::NodePrepareResourcesResponse(
      const draapi::v1::NodePrepareResourcesRequest&)>;
  using UnprepareFn = std::function<draapi::v1::NodeUnprepareResourcesResponse(
      const draapi::v1::NodeUnprepareResourcesRequest&)>;

  struct Options {
    bool serve_v1 = true;
    bool serve_v1beta1 = true;
    bool serve_health_v1 = false;
    bool serve_health_v1alpha1 = false;
    // Non-OK: each health stream ends with it before sending anything.
    grpc::Status health_status = grpc::Status::OK;
  };

  // Starts serving on `socket`; started() says whether that worked.
  FakeDriver(const std::string& socket, Options options);
  explicit FakeDriver(const std::string& socket) : FakeDriver(socket, Options{}) {}
  ~FakeDriver();
  FakeDriver(const FakeDriver&) = delete;
  FakeDriver& operator=(const FakeDriver&) = delete;

  bool started() const { return server_ != nullptr; }

  // Crash ends every call under way at once, as a driver that dies mid-call: its clients see
  // the calls fail. The answer functions still running finish on their own; nothing is served
  // after this. Blocks until they have finished.
  void Crash() ABSL_LOCKS_EXCLUDED(mu_);

  void OnPrepare(PrepareFn fn) ABSL_LOCKS_EXCLUDED(mu_);
  void OnUnprepare(UnprepareFn fn) ABSL_LOCKS_EXCLUDED(mu_);

  int prepare_calls() const { return prepare_calls_.load(); }
  int unprepare_calls() const { return unprepare_calls_.load(); }
  // The service versions the calls came in on ("v1" or "v1beta1"), in order.
  std::vector<std::string> versions() const ABSL_LOCKS_EXCLUDED(mu_);

  // PushHealth sends `report` on every open health stream and keeps it for the streams opened
  // later.
  void PushHealth(const ::v1::NodeWatchResourcesResponse& report) ABSL_LOCKS_EXCLUDED(mu_);
  // EndHealthStreams ends the open health streams with `status` (new ones stay open).
  void EndHealthStreams(const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_);
  // Health streams opened so far, and open now.
  int health_streams() const { return health_streams_.load(); }
  int open_health_streams() const ABSL_LOCKS_EXCLUDED(mu_);
  // The versions the health streams came in on ("v1" or "v1alpha1"), in order.
  std::vector<std::string> health_versions() const ABSL_LOCKS_EXCLUDED(mu_);

  // WatchHealth serves one health stream until it is ended, the client goes, or the server shuts
  // down; `send` writes one report (false once the stream is broken). Both health services call
  // it.
  grpc::Status WatchHealth(grpc::ServerContext& context, const std::string& version,
                           const std::function<bool(const ::v1::NodeWatchResourcesResponse&)>& send)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Prepare and Unprepare answer one call each; both services call them.
  draapi::v1::NodePrepareResourcesResponse Prepare(
      const draapi::v1::NodePrepareResourcesRequest& request, const std::string& version)
      ABSL_LOCKS_EXCLUDED(mu_);
  draapi::v1::NodeUnprepareResourcesResponse Unprepare(
      const draapi::v1::NodeUnprepareResourcesRequest& request, const std::string& version)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class V1Service;
  class V1beta1Service;
  class HealthV1Service;
  class HealthV1alpha1Service;
  // One open health stream: the reports it has not sent yet, and how it should end.
  struct HealthWatch {
    std::vector<::v1::NodeWatchResourcesResponse> pending;
    bool ended = false;
    grpc::Status end_status;
  };

  const grpc::Status health_status_;
  std::unique_ptr<V1Service> v1_;
  std::unique_ptr<V1beta1Service> v1beta1_;
  std::unique_ptr<HealthV1Service> health_v1_;
  std::unique_ptr<HealthV1alpha1Service> health_v1alpha1_;
  std::unique_ptr<grpc::Server> server_;
  std::atomic<int> prepare_calls_{0};
  std::atomic<int> unprepare_calls_{0};
  std::atomic<int> health_streams_{0};
  mutable absl::Mutex mu_;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<::v1::NodeWatchResourcesResponse> last_report_ ABSL_GUARDED_BY(mu_);
  std::vector<HealthWatch*> watches_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> health_versions_ ABSL_GUARDED_BY(mu_);
  PrepareFn prepare_ ABSL_GUARDED_BY(mu_);
  UnprepareFn unprepare_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> versions_ ABSL_GUARDED_BY(mu_);
};

// OneDeviceEach: an answer that gives each claim one device, `device` of `pool` serving
// `request`, with the CDI device "<cdi_kind>=<claim name>" (as a driver that prepares one
// device per claim answers).
FakeDriver::PrepareFn OneDeviceEach(std::string pool, std::string device, std::string request,
                                    std::string cdi_kind);

}  // namespace devmgr::testing
