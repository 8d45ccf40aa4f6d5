#include "tests/dra/fake_driver.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/unix_socket.h"
#include "dra-health/v1/api.grpc.pb.h"
#include "dra-health/v1alpha1/api.grpc.pb.h"
#include "dra/api_versions.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"

namespace devmgr::testing {

using ::devmgr::dra::ConvertVersion;

class FakeDriver::V1Service final : public draapi::v1::DRAPlugin::Service {
 public:
  explicit V1Service(FakeDriver& driver) : driver_(driver) {}
  grpc::Status NodePrepareResources(grpc::ServerContext*,
                                    const draapi::v1::NodePrepareResourcesRequest* request,
                                    draapi::v1::NodePrepareResourcesResponse* response) override {
    *response = driver_.Prepare(*request, "v1");
    return grpc::Status::OK;
  }
  grpc::Status NodeUnprepareResources(
      grpc::ServerContext*, const draapi::v1::NodeUnprepareResourcesRequest* request,
      draapi::v1::NodeUnprepareResourcesResponse* response) override {
    *response = driver_.Unprepare(*request, "v1");
    return grpc::Status::OK;
  }

 private:
  FakeDriver& driver_;
};

class FakeDriver::V1beta1Service final : public draapi::v1beta1::DRAPlugin::Service {
 public:
  explicit V1beta1Service(FakeDriver& driver) : driver_(driver) {}
  grpc::Status NodePrepareResources(
      grpc::ServerContext*, const draapi::v1beta1::NodePrepareResourcesRequest* request,
      draapi::v1beta1::NodePrepareResourcesResponse* response) override {
    *response = ConvertVersion<draapi::v1beta1::NodePrepareResourcesResponse>(driver_.Prepare(
        ConvertVersion<draapi::v1::NodePrepareResourcesRequest>(*request), "v1beta1"));
    return grpc::Status::OK;
  }
  grpc::Status NodeUnprepareResources(
      grpc::ServerContext*, const draapi::v1beta1::NodeUnprepareResourcesRequest* request,
      draapi::v1beta1::NodeUnprepareResourcesResponse* response) override {
    *response = ConvertVersion<draapi::v1beta1::NodeUnprepareResourcesResponse>(driver_.Unprepare(
        ConvertVersion<draapi::v1::NodeUnprepareResourcesRequest>(*request), "v1beta1"));
    return grpc::Status::OK;
  }

 private:
  FakeDriver& driver_;
};

class FakeDriver::HealthV1Service final : public ::v1::DRAResourceHealth::Service {
 public:
  explicit HealthV1Service(FakeDriver& driver) : driver_(driver) {}
  grpc::Status NodeWatchResources(
      grpc::ServerContext* context, const ::v1::NodeWatchResourcesRequest*,
      grpc::ServerWriter<::v1::NodeWatchResourcesResponse>* writer) override {
    return driver_.WatchHealth(*context, "v1", [writer](const ::v1::NodeWatchResourcesResponse& r) {
      return writer->Write(r);
    });
  }

 private:
  FakeDriver& driver_;
};

class FakeDriver::HealthV1alpha1Service final : public ::v1alpha1::DRAResourceHealth::Service {
 public:
  explicit HealthV1alpha1Service(FakeDriver& driver) : driver_(driver) {}
  grpc::Status NodeWatchResources(
      grpc::ServerContext* context, const ::v1alpha1::NodeWatchResourcesRequest*,
      grpc::ServerWriter<::v1alpha1::NodeWatchResourcesResponse>* writer) override {
    return driver_.WatchHealth(
        *context, "v1alpha1", [writer](const ::v1::NodeWatchResourcesResponse& r) {
          return writer->Write(ConvertVersion<::v1alpha1::NodeWatchResourcesResponse>(r));
        });
  }

 private:
  FakeDriver& driver_;
};

FakeDriver::FakeDriver(const std::string& socket, Options options)
    : health_status_(options.health_status) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(socket), grpc::InsecureServerCredentials());
  if (options.serve_v1) {
    v1_ = std::make_unique<V1Service>(*this);
    builder.RegisterService(v1_.get());
  }
  if (options.serve_v1beta1) {
    v1beta1_ = std::make_unique<V1beta1Service>(*this);
    builder.RegisterService(v1beta1_.get());
  }
  if (options.serve_health_v1) {
    health_v1_ = std::make_unique<HealthV1Service>(*this);
    builder.RegisterService(health_v1_.get());
  }
  if (options.serve_health_v1alpha1) {
    health_v1alpha1_ = std::make_unique<HealthV1alpha1Service>(*this);
    builder.RegisterService(health_v1alpha1_.get());
  }
  server_ = builder.BuildAndStart();
}

FakeDriver::~FakeDriver() {
  {
    // Open health streams would keep Shutdown waiting: end them first.
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
  }
  if (server_ != nullptr) server_->Shutdown();
}

void FakeDriver::Crash() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
  }
  // A deadline already passed: the calls under way are cancelled instead of awaited.
  if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
}

void FakeDriver::PushHealth(const ::v1::NodeWatchResourcesResponse& report) {
  absl::MutexLock lock(&mu_);
  last_report_ = report;
  for (HealthWatch* watch : watches_) watch->pending.push_back(report);
}

void FakeDriver::EndHealthStreams(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  for (HealthWatch* watch : watches_) {
    watch->ended = true;
    watch->end_status = status;
  }
}

int FakeDriver::open_health_streams() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(watches_.size());
}

std::vector<std::string> FakeDriver::health_versions() const {
  absl::MutexLock lock(&mu_);
  return health_versions_;
}

grpc::Status FakeDriver::WatchHealth(
    grpc::ServerContext& context, const std::string& version,
    const std::function<bool(const ::v1::NodeWatchResourcesResponse&)>& send) {
  ++health_streams_;
  HealthWatch watch;
  {
    absl::MutexLock lock(&mu_);
    health_versions_.push_back(version);
    if (!health_status_.ok()) return health_status_;
    if (last_report_.has_value()) watch.pending.push_back(*last_report_);
    watches_.push_back(&watch);
  }
  grpc::Status end = grpc::Status::OK;
  for (;;) {
    std::vector<::v1::NodeWatchResourcesResponse> reports;
    {
      absl::MutexLock lock(&mu_);
      // A client that goes away is only seen by polling its context.
      auto ready = [&watch, this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !watch.pending.empty() || watch.ended || shutting_down_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(10));
      if (shutting_down_) {
        end = grpc::Status(grpc::StatusCode::UNAVAILABLE, "driver is shutting down");
        break;
      }
      if (context.IsCancelled()) {
        end = grpc::Status::CANCELLED;
        break;
      }
      reports.swap(watch.pending);
      if (reports.empty() && watch.ended) {
        end = watch.end_status;
        break;
      }
    }
    for (const auto& report : reports) {
      if (!send(report)) {
        end = grpc::Status::CANCELLED;
        break;
      }
    }
    if (!end.ok()) break;
  }
  absl::MutexLock lock(&mu_);
  watches_.erase(std::find(watches_.begin(), watches_.end(), &watch));
  return end;
}

void FakeDriver::OnPrepare(PrepareFn fn) {
  absl::MutexLock lock(&mu_);
  prepare_ = std::move(fn);
}

void FakeDriver::OnUnprepare(UnprepareFn fn) {
  absl::MutexLock lock(&mu_);
  unprepare_ = std::move(fn);
}

std::vector<std::string> FakeDriver::versions() const {
  absl::MutexLock lock(&mu_);
  return versions_;
}

draapi::v1::NodePrepareResourcesResponse FakeDriver::Prepare(
    const draapi::v1::NodePrepareResourcesRequest& request, const std::string& version) {
  ++prepare_calls_;
  PrepareFn fn;
  {
    absl::MutexLock lock(&mu_);
    versions_.push_back(version);
    fn = prepare_;
  }
  if (fn) return fn(request);
  draapi::v1::NodePrepareResourcesResponse response;
  for (const auto& claim : request.claims()) (*response.mutable_claims())[claim.uid()];
  return response;
}

draapi::v1::NodeUnprepareResourcesResponse FakeDriver::Unprepare(
    const draapi::v1::NodeUnprepareResourcesRequest& request, const std::string& version) {
  ++unprepare_calls_;
  UnprepareFn fn;
  {
    absl::MutexLock lock(&mu_);
    versions_.push_back(version);
    fn = unprepare_;
  }
  if (fn) return fn(request);
  draapi::v1::NodeUnprepareResourcesResponse response;
  for (const auto& claim : request.claims()) (*response.mutable_claims())[claim.uid()];
  return response;
}

FakeDriver::PrepareFn OneDeviceEach(std::string pool, std::string device, std::string request,
                                    std::string cdi_kind) {
  return [=](const draapi::v1::NodePrepareResourcesRequest& prepare) {
    draapi::v1::NodePrepareResourcesResponse response;
    for (const auto& claim : prepare.claims()) {
      auto* answer = (*response.mutable_claims())[claim.uid()].add_devices();
      answer->set_pool_name(pool);
      answer->set_device_name(device);
      answer->add_request_names(request);
      answer->add_cdi_device_ids(absl::StrCat(cdi_kind, "=", claim.name()));
    }
    return response;
  };
}

}  // namespace devmgr::testing
