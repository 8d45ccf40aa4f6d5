// DevicePluginService: the v1beta1.DevicePlugin gRPC service of one device type, on the callback
// API. It holds the current devices of its type, streams them to every open ListAndWatch, and
// answers Allocate, GetPreferredAllocation and PreStartContainer from them or through the
// plugin's hooks.
//
// ListAndWatch is served in its raw form by ListAndWatchStreams: one reactor per stream, at most
// one write in flight, and a newer snapshot replaces an unsent older one. A snapshot's bytes are
// written once per Update (ListAndWatchBytes) and shared by every stream.
// Used by Plugin (one per device type and server); not part of the SDK's public surface.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "common/event_loop.h"
#include "common/logging.h"
#include "deviceplugin/cdi.h"
#include "deviceplugin/device_tree.h"
#include "deviceplugin/hooks.h"
#include "deviceplugin/list_and_watch_streams.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace devmgr::deviceplugin {

class DevicePluginService final : public v1beta1::DevicePlugin::WithRawCallbackMethod_ListAndWatch<
                                      v1beta1::DevicePlugin::CallbackService> {
 public:
  // `hook_loop` runs the hooks and must outlive the service; `cdi` set means Allocate also
  // returns CDI device names.
  DevicePluginService(std::string device_type, const Hooks& hooks, std::optional<CdiOptions> cdi,
                      EventLoop& hook_loop, LoggerPtr logger);
  // Requires FinishStreams and WaitForStreamsDone (or no stream ever opened).
  ~DevicePluginService() override = default;
  DevicePluginService(const DevicePluginService&) = delete;
  DevicePluginService& operator=(const DevicePluginService&) = delete;

  // Options are derived from which hooks exist. Thread-safe.
  v1beta1::DevicePluginOptions Options() const;

  // Update makes `devices` the current set and sends it to every open stream. Thread-safe; never
  // blocks on a stream (builds the snapshot, then hands it over).
  void Update(std::shared_ptr<const DeviceMap> devices) ABSL_LOCKS_EXCLUDED(mu_);

  // FinishStreams ends every open ListAndWatch with OK and refuses new ones (UNAVAILABLE).
  // Thread-safe; does not wait.
  void FinishStreams() { streams_.Close(); }

  // WaitForStreamsDone blocks until every stream's OnDone has run. Call after FinishStreams.
  void WaitForStreamsDone() { streams_.WaitForAllDone(); }

  // v1beta1.DevicePlugin.
  grpc::ServerUnaryReactor* GetDevicePluginOptions(grpc::CallbackServerContext* context,
                                                   const v1beta1::Empty* request,
                                                   v1beta1::DevicePluginOptions* response) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* ListAndWatch(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) override;
  grpc::ServerUnaryReactor* GetPreferredAllocation(
      grpc::CallbackServerContext* context, const v1beta1::PreferredAllocationRequest* request,
      v1beta1::PreferredAllocationResponse* response) override;
  grpc::ServerUnaryReactor* Allocate(grpc::CallbackServerContext* context,
                                     const v1beta1::AllocateRequest* request,
                                     v1beta1::AllocateResponse* response) override;
  grpc::ServerUnaryReactor* PreStartContainer(
      grpc::CallbackServerContext* context, const v1beta1::PreStartContainerRequest* request,
      v1beta1::PreStartContainerResponse* response) override;

 private:
  std::shared_ptr<const DeviceMap> devices() const ABSL_LOCKS_EXCLUDED(mu_);
  // DefaultAllocate fills `response` from the tree (shared nodes and mounts once, values of a
  // key several devices set joined with ','); InvalidArgument for an unknown device,
  // FailedPrecondition for an unhealthy one.
  absl::Status DefaultAllocate(const v1beta1::AllocateRequest& request,
                               v1beta1::AllocateResponse& response) const;
  absl::Status AllocateWithHooks(const v1beta1::AllocateRequest& request,
                                 v1beta1::AllocateResponse& response) const;
  // RunHook answers the call with `answer` on the hook thread (hooks may block), unless the call
  // ended while it waited its turn: then the hook is not run and the call ends CANCELLED.
  // `answer` may use the call's request and response, which live until the reactor finishes.
  void RunHook(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
               std::function<grpc::Status()> answer);

  const std::string device_type_;
  const Hooks hooks_;
  const std::optional<CdiOptions> cdi_;
  EventLoop& hook_loop_;
  const LoggerPtr logger_;

  mutable absl::Mutex mu_;
  std::shared_ptr<const DeviceMap> devices_ ABSL_GUARDED_BY(mu_);
  ListAndWatchStreams streams_;
};

}  // namespace devmgr::deviceplugin
