#include "tests/dra/fake_driver.h"

#include "common/unix_socket.h"
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

FakeDriver::FakeDriver(const std::string& socket, Options options) {
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
  server_ = builder.BuildAndStart();
}

FakeDriver::~FakeDriver() {
  if (server_ != nullptr) server_->Shutdown();
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

}  // namespace devmgr::testing
