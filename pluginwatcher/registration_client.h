// RegistrationClient: the node's side of one plugin's pluginregistration.Registration service, for
// one handshake: a dial bounded in time, then GetInfo and NotifyRegistrationStatus, each with its
// own deadline (upstream's dial and notifyPlugin in operation_generator.go). Cancel lets the
// watcher's Stop end a handshake that waits on a plugin which never answers.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace devmgr::pluginwatcher {

class RegistrationClient {
 public:
  // The largest GetInfo answer accepted; a PluginInfo is a few hundred bytes.
  static constexpr int kMaxMessageBytes = 64 * 1024;

  // How long Dial waits for a process to listen on a socket that refuses connections or is
  // not there (Dial).
  static constexpr absl::Duration kRefusedGrace = absl::Seconds(1);

  explicit RegistrationClient(std::filesystem::path socket_path);
  RegistrationClient(const RegistrationClient&) = delete;
  RegistrationClient& operator=(const RegistrationClient&) = delete;

  // Dial connects to the socket, waiting up to `timeout` for the plugin to speak HTTP/2 (as
  // gRPC's WithBlock does), but no more than kRefusedGrace for a process to listen on it: a
  // socket whose plugin is gone fails fast. Blocks; Unavailable or DeadlineExceeded on failure,
  // Cancelled after Cancel. Call once, before the RPCs.
  absl::Status Dial(absl::Duration timeout);

  // GetInfo and NotifyRegistrationStatus: unary calls with a deadline of `timeout`. Block; the
  // plugin's gRPC status on failure, Cancelled after Cancel. Only after a successful Dial.
  // Neither waits for a lost connection to come back (upstream sets no WaitForReady): a plugin
  // that is gone fails the call at once.
  absl::StatusOr<pluginregistration::PluginInfo> GetInfo(absl::Duration timeout);
  absl::Status NotifyRegistrationStatus(bool registered, const std::string& error,
                                        absl::Duration timeout);

  // Cancel makes the call in progress, and every later one, fail quickly. Thread-safe, never
  // blocks; the only method another thread may call.
  void Cancel();

 private:
  // Runs `call` with a context that Cancel can reach.
  template <typename Call>
  absl::Status RunCall(absl::Duration timeout, Call&& call);

  const std::filesystem::path socket_path_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pluginregistration::Registration::Stub> stub_;

  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // The context of the call in progress, for Cancel; null between calls.
  grpc::ClientContext* active_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace devmgr::pluginwatcher
