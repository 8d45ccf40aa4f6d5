// FakeDeviceHealth: the DRAResourceHealth side of `devmgr plugin fake-dra`, served as v1 and,
// for kubelets before it, v1alpha1 (the same messages; upstream's helper serves both). Every
// device starts healthy; Flip turns the next one (round-robin)
// unhealthy or back. Each stream gets the health of every device when it opens, after each flip,
// and again every report interval: a kubelet reads a device whose report is older than its
// health check timeout (30 s unless the driver names one) as Unknown.
//
// Thread-safety: Flip and Shutdown may be called from any thread (Flip is not
// async-signal-safe); streams run on gRPC's threads and end at Shutdown.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dra-health/v1/api.grpc.pb.h"
#include "dra-health/v1alpha1/api.grpc.pb.h"

namespace devmgr::plugins {

class FakeDeviceHealth final : public ::v1::DRAResourceHealth::Service {
 public:
  // Devices "dev-0" .. "dev-<devices-1>" of `pool`, reported every `report_interval` at least.
  FakeDeviceHealth(std::string pool, int64_t devices, absl::Duration report_interval);

  // Flip toggles the health of the next device and tells every open stream.
  void Flip() ABSL_LOCKS_EXCLUDED(mu_);
  // Shutdown ends every stream, now and later; call before the server's Shutdown.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  grpc::Status NodeWatchResources(
      grpc::ServerContext* context, const ::v1::NodeWatchResourcesRequest* request,
      grpc::ServerWriter<::v1::NodeWatchResourcesResponse>* writer) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // The same health as v1alpha1.DRAResourceHealth.
  grpc::Service& v1alpha1() { return v1alpha1_; }

 private:
  class V1alpha1 final : public ::v1alpha1::DRAResourceHealth::Service {
   public:
    explicit V1alpha1(FakeDeviceHealth& health) : health_(health) {}
    grpc::Status NodeWatchResources(
        grpc::ServerContext* context, const ::v1alpha1::NodeWatchResourcesRequest* /*request*/,
        grpc::ServerWriter<::v1alpha1::NodeWatchResourcesResponse>* writer) override;

   private:
    FakeDeviceHealth& health_;
  };

  // Watch sends the reports of either version (their messages are the same on the wire).
  template <typename Response>
  grpc::Status Watch(grpc::ServerContext* context, grpc::ServerWriter<Response>* writer)
      ABSL_LOCKS_EXCLUDED(mu_);
  ::v1::NodeWatchResourcesResponse ReportLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string pool_;
  const absl::Duration report_interval_;
  mutable absl::Mutex mu_;
  std::vector<bool> unhealthy_ ABSL_GUARDED_BY(mu_);
  size_t next_flip_ ABSL_GUARDED_BY(mu_) = 0;
  // Bumped by each flip: a stream sends when it differs from what it sent last.
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  V1alpha1 v1alpha1_{*this};
};

}  // namespace devmgr::plugins
