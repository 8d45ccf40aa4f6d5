// FakeKubelet: the kubelet side of device plugin registration, small enough to trust, for the
// SDK's tests until they can run against the real Manager. It serves v1beta1.Registration on
// <dir>/kubelet.sock and, like the kubelet, answers Register only after dialing the plugin's
// socket, calling GetDevicePluginOptions and opening ListAndWatch. It records what every plugin
// sends. RegisterFromRegistry plays the kubelet's plugin watcher for one plugins_registry socket
// (GetInfo, connect, NotifyRegistrationStatus).
//
// All methods are thread-safe. Stop (and the destructor) cancel the streams and wait for them.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/event_loop.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace devmgr::testing {

struct SeenDevice {
  std::string health;
  std::vector<int64_t> numa_nodes;
};

// What the fake kubelet knows about one resource.
struct SeenResource {
  int registrations = 0;  // successful connections (Register or registry)
  v1beta1::DevicePluginOptions options;
  std::string endpoint;    // socket path dialed
  int updates = 0;         // ListAndWatch messages received, over all connections
  bool connected = false;  // a ListAndWatch stream is open
  std::map<std::string, SeenDevice> devices;  // the last snapshot
};

class FakeKubelet {
 public:
  // `plugin_dir` holds kubelet.sock; it is created if missing.
  explicit FakeKubelet(std::filesystem::path plugin_dir);
  ~FakeKubelet();
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  // Start serves kubelet.sock. With `remove_plugin_sockets`, first removes every socket in the
  // folder, as a starting kubelet does.
  absl::Status Start(bool remove_plugin_sockets = false);
  // Stop closes every plugin connection, stops the server and removes kubelet.sock.
  void Stop();

  // RegisterFromRegistry does the plugin watcher's handshake with the registration socket
  // `socket`; returns the error it notified the plugin with, if any.
  absl::Status RegisterFromRegistry(const std::filesystem::path& socket);

  // Register requests seen, including rejected ones.
  int register_calls() const;
  std::vector<v1beta1::RegisterRequest> register_requests() const;
  SeenResource Resource(const std::string& resource_name) const;
  std::filesystem::path kubelet_socket() const { return plugin_dir_ / "kubelet.sock"; }

  // Calls on the plugin serving `resource_name`, with a 10 s deadline unless told otherwise.
  absl::StatusOr<v1beta1::AllocateResponse> Allocate(
      const std::string& resource_name, const std::vector<std::string>& ids,
      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  absl::StatusOr<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const std::string& resource_name, const std::vector<std::string>& available,
      const std::vector<std::string>& must_include, int size);
  absl::Status PreStartContainer(const std::string& resource_name,
                                 const std::vector<std::string>& ids);

 private:
  class RegistrationService;
  class Connection;

  // Connect dials `socket`, reads the options and opens ListAndWatch, replacing any older
  // connection of `resource_name`. Blocks; never on a gRPC thread.
  absl::Status Connect(const std::string& resource_name, const std::filesystem::path& socket);
  std::shared_ptr<grpc::Channel> ChannelOf(const std::string& resource_name) const;
  void CloseConnections();

  const std::filesystem::path plugin_dir_;
  mutable absl::Mutex mu_;
  std::map<std::string, SeenResource> resources_ ABSL_GUARDED_BY(mu_);
  std::vector<v1beta1::RegisterRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);

  std::unique_ptr<RegistrationService> service_;
  std::unique_ptr<grpc::Server> server_;
  // Does the dialing that Register waits for, off the gRPC threads.
  EventLoop loop_;
};

}  // namespace devmgr::testing
