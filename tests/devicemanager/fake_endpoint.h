// FakeEndpoint: an in-memory Endpoint for unit tests of the manager, with no socket and no
// gRPC: the test pushes ListAndWatch snapshots and ends the stream itself, sets what Allocate,
// GetPreferredAllocation and PreStartContainer answer, and counts the calls. FakeEndpointFactory
// hands one out for each Connect (ManagerOptions::endpoint_factory) and keeps the newest per
// resource for the test.
//
// Thread-safety: every method is thread-safe. The answer functions run on the caller's thread
// (an admission's) without any lock of the fake held, so they may block, e.g. until the test
// lets them go on. Snapshots and the stream's end go to EndpointCallbacks inline, on the thread
// of PushDevices, EndStream or CancelStream.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "devicemanager/endpoint.h"
#include "devicemanager/types.h"

namespace devmgr::testing {

class FakeEndpoint final : public devicemanager::Endpoint,
                           public std::enable_shared_from_this<FakeEndpoint> {
 public:
  using AllocateFn = std::function<absl::StatusOr<v1beta1::AllocateResponse>(
      const std::vector<std::string>& device_ids)>;
  using PreferredFn = std::function<absl::StatusOr<v1beta1::PreferredAllocationResponse>(
      const std::vector<std::string>& available, const std::vector<std::string>& must_include,
      int size)>;
  using PreStartFn = std::function<absl::StatusOr<v1beta1::PreStartContainerResponse>(
      const std::vector<std::string>& device_ids)>;

  // What one GetPreferredAllocation call asked.
  struct PreferredRequest {
    std::vector<std::string> available;
    std::vector<std::string> must_include;
    int size = 0;
  };

  // `callbacks` must outlive the stream.
  FakeEndpoint(std::string resource_name, std::filesystem::path socket,
               v1beta1::DevicePluginOptions options, devicemanager::EndpointCallbacks& callbacks);

  const v1beta1::DevicePluginOptions& plugin_options() const override { return options_; }
  void StartListAndWatch() override ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the stream (OnStreamEnded with Cancelled) if it was started and has not ended.
  void CancelStream() override ABSL_LOCKS_EXCLUDED(mu_);

  // PushDevices sends a snapshot, as ListAndWatch would; false (nothing sent) unless the
  // stream is running.
  bool PushDevices(std::vector<devicemanager::Device> devices) ABSL_LOCKS_EXCLUDED(mu_);
  // EndStream ends the stream with `status`, as a plugin that goes away.
  void EndStream(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

  // The answers; by default Allocate answers one empty container response, and
  // GetPreferredAllocation and PreStartContainer answer empty responses.
  void OnAllocate(AllocateFn fn) ABSL_LOCKS_EXCLUDED(mu_);
  void OnGetPreferredAllocation(PreferredFn fn) ABSL_LOCKS_EXCLUDED(mu_);
  void OnPreStartContainer(PreStartFn fn) ABSL_LOCKS_EXCLUDED(mu_);

  int allocate_calls() const { return allocate_calls_.load(); }
  int preferred_calls() const { return preferred_calls_.load(); }
  int pre_start_calls() const { return pre_start_calls_.load(); }
  std::vector<PreferredRequest> preferred_requests() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::StatusOr<v1beta1::AllocateResponse> DoAllocate(
      const std::vector<std::string>& device_ids) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<v1beta1::PreStartContainerResponse> DoPreStartContainer(
      const std::vector<std::string>& device_ids) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<v1beta1::PreferredAllocationResponse> DoGetPreferredAllocation(
      const std::vector<std::string>& available, const std::vector<std::string>& must_include,
      int size) override ABSL_LOCKS_EXCLUDED(mu_);

  // Ends the stream once: true if this call ended it.
  bool EndOnce() ABSL_LOCKS_EXCLUDED(mu_);

  const v1beta1::DevicePluginOptions options_;
  devicemanager::EndpointCallbacks& callbacks_;
  std::atomic<int> allocate_calls_{0};
  std::atomic<int> preferred_calls_{0};
  std::atomic<int> pre_start_calls_{0};

  mutable absl::Mutex mu_;
  enum class Stream { kNotStarted, kRunning, kEnded };
  Stream stream_ ABSL_GUARDED_BY(mu_) = Stream::kNotStarted;
  AllocateFn allocate_ ABSL_GUARDED_BY(mu_);
  PreferredFn preferred_ ABSL_GUARDED_BY(mu_);
  PreStartFn pre_start_ ABSL_GUARDED_BY(mu_);
  std::vector<PreferredRequest> preferred_requests_ ABSL_GUARDED_BY(mu_);
};

// FakeEndpointFactory connects FakeEndpoints with the plugin options set here.
class FakeEndpointFactory final : public devicemanager::EndpointFactory {
 public:
  absl::StatusOr<devicemanager::EndpointSharedPtr> Connect(
      std::string resource_name, std::filesystem::path socket,
      devicemanager::EndpointCallbacks& callbacks,
      const devicemanager::ConnectLimits& limits) override ABSL_LOCKS_EXCLUDED(mu_);

  // Options of the endpoints connected from now on.
  void set_plugin_options(v1beta1::DevicePluginOptions options) ABSL_LOCKS_EXCLUDED(mu_);
  // The newest endpoint connected for `resource_name`, or null.
  std::shared_ptr<FakeEndpoint> endpoint(const std::string& resource_name) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // The dial deadline the newest Connect was given (InfiniteFuture before any).
  absl::Time last_dial_deadline() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  v1beta1::DevicePluginOptions options_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<FakeEndpoint>> endpoints_ ABSL_GUARDED_BY(mu_);
  absl::Time last_dial_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
};

}  // namespace devmgr::testing
