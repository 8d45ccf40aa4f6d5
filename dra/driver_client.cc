#include "dra/driver_client.h"

#include <utility>

#include "common/channel_reconnect.h"
#include "common/plugin_channel.h"
#include "common/status.h"
#include "dra/api_versions.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"

namespace devmgr::dra {
namespace {

// Call runs one unary call of `stub` with `deadline`, converting the request to `Request`
// and the answer back to `Response` (the v1 types) when the stub speaks v1beta1.
template <typename Response, typename StubResponse, typename Stub, typename StubRequest,
          typename Request>
absl::StatusOr<Response> Call(Stub& stub,
                              grpc::Status (Stub::*method)(grpc::ClientContext*, const StubRequest&,
                                                           StubResponse*),
                              const Request& request, grpc::ClientContext& context) {
  StubResponse response;
  grpc::Status status;
  if constexpr (std::is_same_v<StubRequest, Request>) {
    status = (stub.*method)(&context, request, &response);
  } else {
    status = (stub.*method)(&context, ConvertVersion<StubRequest>(request), &response);
  }
  if (!status.ok()) return FromGrpcCall(status);
  if constexpr (std::is_same_v<StubResponse, Response>) {
    return response;
  } else {
    return ConvertVersion<Response>(response);
  }
}

}  // namespace

DriverClient::DriverClient(std::string driver_name, std::string endpoint, std::string service,
                           absl::Duration call_timeout, ManagerMetrics* metrics)
    : driver_name_(std::move(driver_name)),
      endpoint_(std::move(endpoint)),
      service_(std::move(service)),
      call_timeout_(call_timeout),
      metrics_(metrics) {
  // The path as given (the registry takes only absolute ones).
  channel_ = PluginChannel(endpoint_);
  // Connect now, so that a driver that is not there shows early (upstream's conn.Connect()).
  channel_->GetState(/*try_to_connect=*/true);
}

bool DriverClient::Connected() const {
  return channel_->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY;
}

absl::StatusOr<draapi::v1::NodePrepareResourcesResponse> DriverClient::NodePrepareResources(
    const draapi::v1::NodePrepareResourcesRequest& request) const {
  const absl::Time start = absl::Now();
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(start + call_timeout_));
  ReconnectIfServed(*channel_, endpoint_, context);
  absl::StatusOr<draapi::v1::NodePrepareResourcesResponse> response;
  if (service_ == kDraPluginServiceV1beta1) {
    auto stub = draapi::v1beta1::DRAPlugin::NewStub(channel_);
    response = Call<draapi::v1::NodePrepareResourcesResponse>(
        *stub, &draapi::v1beta1::DRAPlugin::Stub::NodePrepareResources, request, context);
  } else {
    auto stub = draapi::v1::DRAPlugin::NewStub(channel_);
    response = Call<draapi::v1::NodePrepareResourcesResponse>(
        *stub, &draapi::v1::DRAPlugin::Stub::NodePrepareResources, request, context);
  }
  Record("NodePrepareResources", response.status(), start);
  return response;
}

absl::StatusOr<draapi::v1::NodeUnprepareResourcesResponse> DriverClient::NodeUnprepareResources(
    const draapi::v1::NodeUnprepareResourcesRequest& request) const {
  const absl::Time start = absl::Now();
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(start + call_timeout_));
  ReconnectIfServed(*channel_, endpoint_, context);
  absl::StatusOr<draapi::v1::NodeUnprepareResourcesResponse> response;
  if (service_ == kDraPluginServiceV1beta1) {
    auto stub = draapi::v1beta1::DRAPlugin::NewStub(channel_);
    response = Call<draapi::v1::NodeUnprepareResourcesResponse>(
        *stub, &draapi::v1beta1::DRAPlugin::Stub::NodeUnprepareResources, request, context);
  } else {
    auto stub = draapi::v1::DRAPlugin::NewStub(channel_);
    response = Call<draapi::v1::NodeUnprepareResourcesResponse>(
        *stub, &draapi::v1::DRAPlugin::Stub::NodeUnprepareResources, request, context);
  }
  Record("NodeUnprepareResources", response.status(), start);
  return response;
}

void DriverClient::Record(absl::string_view method, const absl::Status& status,
                          absl::Time start) const {
  if (metrics_ == nullptr) return;
  metrics_->DriverCallDone(driver_name_, GrpcMethod(service_, method), status.code(),
                           absl::Now() - start);
}

}  // namespace devmgr::dra
