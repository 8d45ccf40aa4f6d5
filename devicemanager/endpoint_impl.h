// EndpointImpl: the production Endpoint, over gRPC. It dials the plugin's unix socket, keeps
// its DevicePluginOptions, runs the ListAndWatch stream (a gRPC ClientReadReactor that hands
// each snapshot to EndpointCallbacks from gRPC threads) and makes the unary calls of pod
// admission, each with its deadline from EndpointOptions. EndpointFactoryImpl makes them for
// the manager.
//
// Lifetime: while its stream runs, an EndpointImpl keeps itself alive, and hands that reference
// to OnStreamEnded (see there for where the last one may be dropped), so it is never destroyed
// under a running reactor.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "devicemanager/callbacks.h"
#include "devicemanager/endpoint.h"
#include "devicemanager/types.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace devmgr::devicemanager {

// Deadlines and limits for the calls an endpoint makes.
struct EndpointOptions {
  absl::Duration dial_timeout = kDefaultDialTimeout;
  // GetDevicePluginOptions, Allocate and GetPreferredAllocation.
  absl::Duration call_timeout = kDefaultPluginCallTimeout;
  absl::Duration pre_start_timeout = kPreStartContainerTimeout;
  // Largest message accepted from the plugin (a ListAndWatch snapshot).
  int max_message_bytes = kDefaultMaxMessageBytes;
};

class EndpointImpl final : public Endpoint, public std::enable_shared_from_this<EndpointImpl> {
 public:
  // Connect dials the plugin at `socket` and waits until the connection is up (at most
  // options.dial_timeout, and not past limits.dial_deadline), then calls GetDevicePluginOptions
  // (options.call_timeout). Blocks the calling thread for that long at most; both steps are
  // given up soon after `*limits.cancelled` becomes true. The stream is not opened yet: see
  // StartListAndWatch. `callbacks` must outlive the stream. Errors (codes from gRPC, texts as
  // upstream): "failed to dial device plugin: ...", "failed to get device plugin options: ...".
  static absl::StatusOr<EndpointSharedPtr> Connect(std::string resource_name,
                                                   std::filesystem::path socket,
                                                   const EndpointOptions& options,
                                                   EndpointCallbacks& callbacks,
                                                   const ConnectLimits& limits = {});

  ~EndpointImpl() override;

  const v1beta1::DevicePluginOptions& plugin_options() const override { return plugin_options_; }
  void StartListAndWatch() override;
  void CancelStream() override;

 private:
  class StreamReactor;

  EndpointImpl(std::string resource_name, std::filesystem::path socket,
               const EndpointOptions& options, EndpointCallbacks& callbacks);

  // Unary calls with call_timeout (pre_start_timeout for PreStartContainer); the gRPC status
  // on failure.
  absl::StatusOr<v1beta1::AllocateResponse> DoAllocate(
      const std::vector<std::string>& device_ids) override;
  absl::StatusOr<v1beta1::PreStartContainerResponse> DoPreStartContainer(
      const std::vector<std::string>& device_ids) override;
  absl::StatusOr<v1beta1::PreferredAllocationResponse> DoGetPreferredAllocation(
      const std::vector<std::string>& available, const std::vector<std::string>& must_include,
      int size) override;

  const EndpointOptions options_;
  EndpointCallbacks& callbacks_;
  // Set once by Connect, before the endpoint is shared; read-only afterwards.
  v1beta1::DevicePluginOptions plugin_options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  // Set by Connect with the rest, so never null on an endpoint it returns.
  std::unique_ptr<StreamReactor> reactor_;
};

// EndpointFactoryImpl connects EndpointImpls with fixed options (see EndpointImpl::Connect).
class EndpointFactoryImpl final : public EndpointFactory {
 public:
  explicit EndpointFactoryImpl(const EndpointOptions& options) : options_(options) {}

  absl::StatusOr<EndpointSharedPtr> Connect(std::string resource_name, std::filesystem::path socket,
                                            EndpointCallbacks& callbacks,
                                            const ConnectLimits& limits) override;

 private:
  const EndpointOptions options_;
};

}  // namespace devmgr::devicemanager
