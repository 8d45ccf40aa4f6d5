// DriverClient: one registered endpoint of a DRA driver, as the kubelet reaches it
// (pkg/kubelet/cm/dra/plugin): one gRPC channel to the service socket the driver named, created
// at registration and reused for every call, and the DRAPlugin service version chosen then
// (v1 or v1beta1, which carry the same messages: calls take and return the v1 ones either way).
//
// Thread-safety: every method may be called from any thread at once. Calls block for at most
// the call timeout.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dra/metrics.h"
#include "dra/v1/api.pb.h"

namespace devmgr::dra {

// The generated code of the DRA node API (proto/dra/v1, proto/dra/v1beta1).
namespace draapi = ::k8s::io::kubelet::pkg::apis::dra;

// The gRPC service names a driver lists in its registration's supported_versions.
inline constexpr char kDraPluginServiceV1[] = "v1.DRAPlugin";
inline constexpr char kDraPluginServiceV1beta1[] = "v1beta1.DRAPlugin";

// Deadline of each call to a driver unless its registration says otherwise (upstream's
// defaultClientCallTimeout: half the kubelet's retry period).
inline constexpr absl::Duration kDefaultCallTimeout = absl::Seconds(45);

class DriverClient {
 public:
  // Creates the channel to the unix socket `endpoint` and starts connecting in the background;
  // `service` is kDraPluginServiceV1 or kDraPluginServiceV1beta1. Each call is told to
  // `metrics` (not owned; may be null).
  DriverClient(std::string driver_name, std::string endpoint, std::string service,
               absl::Duration call_timeout, ManagerMetrics* metrics = nullptr);

  const std::string& driver_name() const { return driver_name_; }
  const std::string& endpoint() const { return endpoint_; }
  const std::string& service() const { return service_; }

  // The endpoint's one connection, which the health stream shares (upstream's one connection per
  // endpoint for all its calls).
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

  // Connected: the channel is ready for calls now (upstream tracks the same through gRPC's
  // connection events). Asks gRPC to reconnect when it is not.
  bool Connected() const;

  // The two calls of the DRAPlugin service, with the call timeout. An RPC error comes back as
  // its status (DeadlineExceeded when the driver does not answer in time). A driver that came
  // back since the connection failed is reached at once (common/channel_reconnect.h).
  absl::StatusOr<draapi::v1::NodePrepareResourcesResponse> NodePrepareResources(
      const draapi::v1::NodePrepareResourcesRequest& request) const;
  absl::StatusOr<draapi::v1::NodeUnprepareResourcesResponse> NodeUnprepareResources(
      const draapi::v1::NodeUnprepareResourcesRequest& request) const;

 private:
  const std::string driver_name_;
  const std::string endpoint_;
  const std::string service_;
  // Record tells the metrics of one call that began at `start`.
  void Record(absl::string_view method, const absl::Status& status, absl::Time start) const;

  const absl::Duration call_timeout_;
  ManagerMetrics* const metrics_;
  std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace devmgr::dra
