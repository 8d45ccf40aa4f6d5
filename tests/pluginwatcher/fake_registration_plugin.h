// FakeRegistrationPlugin: a real pluginregistration.Registration server on a unix socket, for the
// plugin watcher's tests (upstream's pluginwatcher/example_plugin.go): it answers GetInfo with
// the PluginInfo it was given, records every NotifyRegistrationStatus, and fails GetInfo on
// demand to play a plugin that is not ready yet, or leaves it unanswered to play a stuck one.
//
// HungSocket: a unix socket that accepts connections and never answers a byte, to play a plugin
// that is stuck.
#pragma once

#include <grpcpp/server.h>
#include <grpcpp/support/server_callback.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace devmgr::testing {

// Thread-safe: the test thread and gRPC's threads use it at once.
class FakeRegistrationPlugin {
 public:
  FakeRegistrationPlugin(std::filesystem::path socket_path, pluginregistration::PluginInfo info);
  // Stops serving.
  ~FakeRegistrationPlugin();
  FakeRegistrationPlugin(const FakeRegistrationPlugin&) = delete;
  FakeRegistrationPlugin& operator=(const FakeRegistrationPlugin&) = delete;

  // Serve starts the server, which creates the socket.
  absl::Status Serve();
  // Stop shuts the server down and removes the socket (which the watcher sees go away).
  // Idempotent.
  void Stop();

  // FailGetInfo makes the next `n` GetInfo calls fail with UNAVAILABLE.
  void FailGetInfo(int n);
  // HangGetInfo makes every GetInfo call wait, unanswered, until Stop.
  void HangGetInfo();

  const std::filesystem::path& socket_path() const { return socket_path_; }
  int get_info_calls() const;
  // Every NotifyRegistrationStatus received, oldest first.
  std::vector<pluginregistration::RegistrationStatus> statuses() const;
  // The last status, if any: registered, or the error text.
  bool registered() const;
  std::string last_error() const;

 private:
  class Service;

  const std::filesystem::path socket_path_;
  const pluginregistration::PluginInfo info_;

  mutable absl::Mutex mu_;
  int get_info_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int get_info_failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<pluginregistration::RegistrationStatus> statuses_ ABSL_GUARDED_BY(mu_);
  bool hang_get_info_ ABSL_GUARDED_BY(mu_) = false;
  // GetInfo calls left unanswered, finished by Stop.
  std::vector<grpc::ServerUnaryReactor*> hung_ ABSL_GUARDED_BY(mu_);

  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
};

// MakeInfo builds a PluginInfo.
pluginregistration::PluginInfo MakeInfo(const std::string& type, const std::string& name,
                                        const std::string& endpoint = "",
                                        std::vector<std::string> versions = {"v1beta1", "v1beta2"});

class HungSocket {
 public:
  explicit HungSocket(std::filesystem::path socket_path);
  // Closes the socket and every accepted connection, and removes the socket file.
  ~HungSocket();
  HungSocket(const HungSocket&) = delete;
  HungSocket& operator=(const HungSocket&) = delete;

  // Listen binds and listens; connections are accepted and left unanswered.
  absl::Status Listen();
  int accepted() const { return accepted_.load(); }

 private:
  void AcceptLoop();

  const std::filesystem::path socket_path_;
  int listen_fd_ = -1;
  std::vector<int> connections_;  // accept thread only, then the destructor
  std::atomic<int> accepted_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace devmgr::testing
