// FakeDriver: the service side of a DRA driver for tests, a gRPC server on a unix socket that
// serves DRAPlugin v1, v1beta1 or both. Each call is answered by a function the test sets
// (by default every claim is prepared with no devices, or unprepared); calls are counted and
// the requests kept. The answer functions run on gRPC's threads and may block, e.g. until the
// test lets them go on.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "dra/v1/api.pb.h"

namespace devmgr::testing {

namespace draapi = ::k8s::io::kubelet::pkg::apis::dra;

class FakeDriver {
 public:
  using PrepareFn =
      std::function<draapi::v1::NodePrepareResourcesResponse(const draapi::v1::NodePrepareResourcesRequest&)>;
  using UnprepareFn = std::function<draapi::v1::NodeUnprepareResourcesResponse(
      const draapi::v1::NodeUnprepareResourcesRequest&)>;

  struct Options {
    bool serve_v1 = true;
    bool serve_v1beta1 = true;
  };

  // Starts serving on `socket`; started() says whether that worked.
  FakeDriver(const std::string& socket, Options options);
  explicit FakeDriver(const std::string& socket) : FakeDriver(socket, Options{}) {}
  ~FakeDriver();
  FakeDriver(const FakeDriver&) = delete;
  FakeDriver& operator=(const FakeDriver&) = delete;

  bool started() const { return server_ != nullptr; }

  void OnPrepare(PrepareFn fn) ABSL_LOCKS_EXCLUDED(mu_);
  void OnUnprepare(UnprepareFn fn) ABSL_LOCKS_EXCLUDED(mu_);

  int prepare_calls() const { return prepare_calls_.load(); }
  int unprepare_calls() const { return unprepare_calls_.load(); }
  // The service versions the calls came in on ("v1" or "v1beta1"), in order.
  std::vector<std::string> versions() const ABSL_LOCKS_EXCLUDED(mu_);

  // Prepare and Unprepare answer one call each; both services call them.
  draapi::v1::NodePrepareResourcesResponse Prepare(const draapi::v1::NodePrepareResourcesRequest& request,
                                                   const std::string& version)
      ABSL_LOCKS_EXCLUDED(mu_);
  draapi::v1::NodeUnprepareResourcesResponse Unprepare(
      const draapi::v1::NodeUnprepareResourcesRequest& request, const std::string& version)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class V1Service;
  class V1beta1Service;

  std::unique_ptr<V1Service> v1_;
  std::unique_ptr<V1beta1Service> v1beta1_;
  std::unique_ptr<grpc::Server> server_;
  std::atomic<int> prepare_calls_{0};
  std::atomic<int> unprepare_calls_{0};
  mutable absl::Mutex mu_;
  PrepareFn prepare_ ABSL_GUARDED_BY(mu_);
  UnprepareFn unprepare_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> versions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::testing
