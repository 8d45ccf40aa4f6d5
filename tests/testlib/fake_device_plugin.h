// FakeDevicePlugin: a real device plugin gRPC server (v1beta1.DevicePlugin) on a unix socket,
// for tests and benchmarks of the manager side, in the spirit of upstream's stub.go. It
// streams full ListAndWatch snapshots through the SDK's ListAndWatchStreams (only the newest
// unsent one is kept per stream), counts calls, lets a test replace Allocate /
// GetPreferredAllocation / PreStartContainer, can hang GetDevicePluginOptions or Allocate to
// play a stuck plugin, and registers itself on kubelet.sock.
//
// Unlike the SDK's DevicePluginService, it sends the wire devices exactly as given (any health
// string, any order, duplicates), announces the options it is told to whatever hooks are set,
// and answers its hooks on the gRPC threads: a test plays a plugin that misbehaves, which the
// SDK never does.
//
// Thread-safety: every method is thread-safe. Hooks run on gRPC threads and must not block.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "deviceplugin/list_and_watch_streams.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace devmgr::testing {

// Device is one wire device: health "Healthy" or "Unhealthy", optional NUMA nodes.
v1beta1::Device MakeDevice(const std::string& id, bool healthy = true,
                           const std::vector<int64_t>& numa_nodes = {});
// Devices "<prefix>0" .. "<prefix>(n-1)", all healthy, without topology.
std::vector<v1beta1::Device> MakeDevices(int n, const std::string& prefix = "dev");

class FakeDevicePlugin {
 public:
  struct Options {
    bool pre_start_required = false;
    bool get_preferred_allocation_available = false;
    // GetDevicePluginOptions never answers (until Stop): a plugin stuck after the dial.
    bool hang_get_options = false;
    // Allocate never answers (until Stop): a plugin that hangs mid-admission.
    bool hang_allocate = false;
  };
  using AllocateFn =
      std::function<grpc::Status(const v1beta1::AllocateRequest&, v1beta1::AllocateResponse*)>;
  using PreStartFn = std::function<grpc::Status(const v1beta1::PreStartContainerRequest&)>;
  using PreferredFn = std::function<grpc::Status(const v1beta1::PreferredAllocationRequest&,
                                                 v1beta1::PreferredAllocationResponse*)>;

  FakeDevicePlugin(std::filesystem::path socket, std::string resource_name,
                   std::vector<v1beta1::Device> devices, Options options);
  FakeDevicePlugin(std::filesystem::path socket, std::string resource_name,
                   std::vector<v1beta1::Device> devices)
      : FakeDevicePlugin(std::move(socket), std::move(resource_name), std::move(devices),
                         Options()) {}
  // Stops if still serving.
  ~FakeDevicePlugin();
  FakeDevicePlugin(const FakeDevicePlugin&) = delete;
  FakeDevicePlugin& operator=(const FakeDevicePlugin&) = delete;

  // Start serves on the socket (a stale socket file there is replaced).
  absl::Status Start();
  // Stop ends every stream and call, and shuts the server down. Idempotent; blocks briefly.
  void Stop();

  // Register calls /v1beta1.Registration/Register on `kubelet_socket` with this plugin's
  // resource name and socket file name (or the given overrides). Blocks up to `timeout`.
  absl::Status Register(const std::filesystem::path& kubelet_socket,
                        absl::Duration timeout = absl::Seconds(15)) const;
  absl::Status Register(const std::filesystem::path& kubelet_socket, const std::string& version,
                        const std::string& resource_name, const std::string& endpoint,
                        absl::Duration timeout = absl::Seconds(15)) const;

  // SetDevices replaces the device list and sends it to every open stream.
  void SetDevices(std::vector<v1beta1::Device> devices);
  // SetSnapshotBytes sends `bytes` to every open stream as they are, as the next message: a
  // plugin that sends what does not parse.
  void SetSnapshotBytes(const std::string& bytes);
  // EndStreams finishes every open ListAndWatch stream with OK (the plugin "goes away" for
  // the manager while the server keeps running).
  void EndStreams();

  void OnAllocate(AllocateFn fn);
  void OnPreStartContainer(PreStartFn fn);
  // Replaces the default preference (must-include devices, then the first available ones).
  void OnGetPreferredAllocation(PreferredFn fn);

  const std::filesystem::path& socket() const { return socket_; }
  const std::string& resource_name() const { return resource_name_; }
  int open_streams() const;
  int list_and_watch_calls() const { return list_and_watch_calls_.load(); }
  int get_options_calls() const { return get_options_calls_.load(); }
  int allocate_calls() const { return allocate_calls_.load(); }
  int pre_start_calls() const { return pre_start_calls_.load(); }
  int preferred_calls() const { return preferred_calls_.load(); }

 private:
  class Service;
  friend class Service;

  const std::filesystem::path socket_;
  const std::string resource_name_;
  const Options options_;
  std::atomic<int> list_and_watch_calls_{0};
  std::atomic<int> get_options_calls_{0};
  std::atomic<int> allocate_calls_{0};
  std::atomic<int> pre_start_calls_{0};
  std::atomic<int> preferred_calls_{0};

  mutable absl::Mutex mu_;
  std::vector<grpc::ServerUnaryReactor*> hung_calls_ ABSL_GUARDED_BY(mu_);
  AllocateFn allocate_fn_ ABSL_GUARDED_BY(mu_);
  PreStartFn pre_start_fn_ ABSL_GUARDED_BY(mu_);
  PreferredFn preferred_fn_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  // Declared before the server, which serves them until Stop.
  deviceplugin::ListAndWatchStreams streams_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace devmgr::testing
