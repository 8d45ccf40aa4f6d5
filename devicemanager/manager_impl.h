// ManagerImpl: the production Manager (see manager.h for the contract of each method). This
// header is for the factory and for tests that need the implementation's extra hooks.
//
// Concurrency (STYLE.md): all device state is behind `mu_`, which is never held across an
// RPC, file I/O or a log line. Endpoint getters and stop-time methods may be called under
// `mu_` (lock order: mu_, then the endpoint's). gRPC reactor threads reach the state through
// EndpointCallbacks / RegistrationCallbacks and only update memory; dials run on connect
// threads; checkpoint writes and change notifications run on the loop thread.
#pragma once

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "checkpoint/file_store.h"
#include "common/event_loop.h"
#include "devicemanager/callbacks.h"
#include "devicemanager/endpoint.h"
#include "devicemanager/manager.h"
#include "devicemanager/pod_devices.h"
#include "devicemanager/registration_server.h"

namespace devmgr::devicemanager {

// Name of the registration socket inside the plugin folder.
inline constexpr absl::string_view kKubeletSocketName = "kubelet.sock";

class ManagerImpl final : public Manager, private EndpointCallbacks, private RegistrationCallbacks {
 public:
  explicit ManagerImpl(ManagerOptions options);
  // Stops (see Stop) if still running.
  ~ManagerImpl() override;

  absl::Status Start(ActivePodsFn active_pods, SourcesReadyFn sources_ready) override;
  void Stop() override;
  CapacityResult GetCapacity() override;
  ResourceDevices GetAllocatableDevices() const override;
  ResourceDevices GetDevices(absl::string_view pod_uid,
                             absl::string_view container_name) const override;
  bool ShouldResetExtendedResourceCapacity() const override;
  int Subscribe(ChangeCallback callback) override;
  void Unsubscribe(int id) override;
  absl::Status ValidatePlugin(absl::string_view resource_name, absl::string_view endpoint,
                              const std::vector<std::string>& versions) override;
  absl::Status RegisterPlugin(absl::string_view resource_name, absl::string_view endpoint,
                              const std::vector<std::string>& versions) override;
  void DeRegisterPlugin(absl::string_view resource_name, absl::string_view endpoint) override;

  // The endpoint currently serving `resource_name` (possibly stopped), or null. For tests and
  // for pod admission.
  EndpointSharedPtr GetEndpoint(absl::string_view resource_name) const;

  // Path of kubelet.sock.
  std::filesystem::path KubeletSocket() const;

 private:
  // EndpointCallbacks.
  void OnDevicesUpdated(const Endpoint& endpoint, std::vector<Device>&& devices) override;
  void OnStreamEnded(const Endpoint& endpoint, const absl::Status& status) override;
  // RegistrationCallbacks.
  void OnRegister(const v1beta1::RegisterRequest& request, DoneFn done) override;

  // ConnectPlugin dials the plugin on `socket` and, unless refused, makes it the endpoint of
  // `resource_name`, replacing and stopping an older one. Blocks for the dial and
  // GetDevicePluginOptions (each bounded by its deadline).
  absl::Status ConnectPlugin(const std::string& resource_name, const std::filesystem::path& socket)
      ABSL_LOCKS_EXCLUDED(mu_);

  // RestoreFromCheckpoint reads the checkpoint at Start (file I/O, so before any other thread
  // can reach the state).
  void RestoreFromCheckpoint() ABSL_LOCKS_EXCLUDED(mu_);
  // WriteCheckpoint snapshots the state under mu_ and writes it outside.
  void WriteCheckpoint() ABSL_LOCKS_EXCLUDED(mu_);
  void WriteCheckpointData(const checkpoint::CheckpointData& data) ABSL_LOCKS_EXCLUDED(mu_);
  checkpoint::CheckpointData CheckpointDataLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunListeners() ABSL_LOCKS_EXCLUDED(mu_, listeners_mu_);

  // upstream's markResourceUnhealthy: every healthy device of `resource_name` becomes
  // unhealthy.
  void MarkResourceUnhealthyLocked(const std::string& resource_name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ResourceGoneLocked: no endpoint (maps out of sync), or its grace period has expired.
  bool ResourceGoneLocked(const std::string& resource_name, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ScheduleCheckpointLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ScheduleNotifyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ManagerOptions options_;
  const Clock& clock_;
  const EndpointOptions endpoint_options_;
  const checkpoint::FileStore store_;
  // Set by Stop before anything else, so that dials in progress give up early.
  std::atomic<bool> connect_cancelled_{false};

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  ActivePodsFn active_pods_ ABSL_GUARDED_BY(mu_);
  SourcesReadyFn sources_ready_ ABSL_GUARDED_BY(mu_);
  // Resource name -> the endpoint serving it; a stopped one stays through its grace period.
  std::map<std::string, EndpointSharedPtr, std::less<>> endpoints_ ABSL_GUARDED_BY(mu_);
  // Resource name -> device IDs by health. A resource is registered while it has an entry in
  // healthy_devices_ (even an empty one), and both maps always have the same keys.
  std::map<std::string, std::set<std::string>, std::less<>> healthy_devices_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::set<std::string>, std::less<>> unhealthy_devices_ ABSL_GUARDED_BY(mu_);
  // Resource name -> every device from the last snapshot, with health and topology.
  ResourceDevices all_devices_ ABSL_GUARDED_BY(mu_);
  PodDevices pod_devices_ ABSL_GUARDED_BY(mu_);
  // ListAndWatch streams started and not yet ended (Stop waits for 0).
  int active_streams_ ABSL_GUARDED_BY(mu_) = 0;
  bool checkpoint_write_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool notify_pending_ ABSL_GUARDED_BY(mu_) = false;

  // Held while listeners run, so that Unsubscribe waits out a run in progress. Listeners may
  // call into the manager, so this one comes first in the lock order.
  absl::Mutex listeners_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::map<int, ChangeCallback> listeners_ ABSL_GUARDED_BY(listeners_mu_);
  int next_listener_id_ ABSL_GUARDED_BY(listeners_mu_) = 1;

  std::unique_ptr<RegistrationServer> server_;
  // Last, so that their threads start after and stop before everything they use.
  boost::asio::thread_pool connect_pool_;
  EventLoop loop_;
};

}  // namespace devmgr::devicemanager
