#include "plugins/fakedra/device_health.h"

#include <ctime>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "dra/api_versions.h"

namespace devmgr::plugins {

FakeDeviceHealth::FakeDeviceHealth(std::string pool, int64_t devices,
                                   absl::Duration report_interval)
    : pool_(std::move(pool)),
      report_interval_(report_interval),
      unhealthy_(static_cast<size_t>(devices), false) {}

void FakeDeviceHealth::Flip() {
  absl::MutexLock lock(&mu_);
  if (unhealthy_.empty()) return;
  unhealthy_[next_flip_] = !unhealthy_[next_flip_];
  next_flip_ = (next_flip_ + 1) % unhealthy_.size();
  ++generation_;
}

void FakeDeviceHealth::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutting_down_ = true;
}

::v1::NodeWatchResourcesResponse FakeDeviceHealth::ReportLocked() const {
  ::v1::NodeWatchResourcesResponse report;
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  for (size_t i = 0; i < unhealthy_.size(); ++i) {
    ::v1::DeviceHealth* device = report.add_devices();
    device->mutable_device()->set_pool_name(pool_);
    device->mutable_device()->set_device_name(absl::StrCat("dev-", i));
    device->set_health(unhealthy_[i] ? ::v1::UNHEALTHY : ::v1::HEALTHY);
    device->set_last_updated_time(now);
    if (unhealthy_[i]) device->set_message("made unhealthy by the fake driver (SIGUSR1)");
  }
  return report;
}

grpc::Status FakeDeviceHealth::NodeWatchResources(
    grpc::ServerContext* context, const ::v1::NodeWatchResourcesRequest*,
    grpc::ServerWriter<::v1::NodeWatchResourcesResponse>* writer) {
  return Watch(context, writer);
}

grpc::Status FakeDeviceHealth::V1alpha1::NodeWatchResources(
    grpc::ServerContext* context, const ::v1alpha1::NodeWatchResourcesRequest*,
    grpc::ServerWriter<::v1alpha1::NodeWatchResourcesResponse>* writer) {
  return health_.Watch(context, writer);
}

template <typename Response>
grpc::Status FakeDeviceHealth::Watch(grpc::ServerContext* context,
                                     grpc::ServerWriter<Response>* writer) {
  // The generation last sent, and when; the first pass sends at once.
  uint64_t sent = ~uint64_t{0};
  absl::Time sent_at = absl::InfinitePast();
  for (;;) {
    Response report;
    {
      absl::MutexLock lock(&mu_);
      // A client that goes away is seen only by asking its context, hence the bounded wait.
      auto news = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return generation_ != sent || shutting_down_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&news), absl::Milliseconds(50));
      if (shutting_down_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "driver stopping");
      if (context->IsCancelled()) return grpc::Status::CANCELLED;
      const absl::Time now = absl::Now();
      if (generation_ == sent && now - sent_at < report_interval_) continue;
      sent = generation_;
      sent_at = now;
      report = dra::ConvertVersion<Response>(ReportLocked());
    }
    if (!writer->Write(report)) return grpc::Status::CANCELLED;
  }
}

}  // namespace devmgr::plugins
