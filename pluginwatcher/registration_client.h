// RegistrationClient: the node's side of one plugin's pluginregistration.Registration service, for
// one handshake: a dial bounded in time, then GetInfo and NotifyRegistrationStatus, each with its
// own deadline (upstream's dial and notifyPlugin in operation_generator.go). Cancel lets the
// watcher's Stop end a handshake that waits on a plugin which never answers.
//
// The socket is opened, not dialled by its path: each name from the registry folder down is
// opened without following a symlink (OpenBeneath), and every connection, gRPC's reconnects
// included, goes to what was opened, through its descriptor. A symlink renamed onto the socket's
// path, or onto a folder on it, while the handshake runs is never followed (devmgr's own
// guarantee: upstream dials the path).
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
#include "pluginwatcher/beneath.h"

namespace devmgr::pluginwatcher {

class RegistrationClient {
 public:
  // The largest GetInfo answer accepted; a PluginInfo is a few hundred bytes.
  static constexpr int kMaxMessageBytes = 64 * 1024;

  // How long Dial waits for a process to listen on a socket that refuses connections or is
  // not there (Dial).
  static constexpr absl::Duration kRefusedGrace = absl::Seconds(1);

  // `socket_path` lies under `registry_dir` (both normal, as NormalFolderPath gives).
  RegistrationClient(std::filesystem::path registry_dir, std::filesystem::path socket_path);
  RegistrationClient(const RegistrationClient&) = delete;
  RegistrationClient& operator=(const RegistrationClient&) = delete;

  // Dial connects to the socket, waiting up to `timeout` for the plugin to speak HTTP/2 (as
  // gRPC's WithBlock does), but no more than kRefusedGrace for a process to listen on it: a
  // socket whose plugin is gone fails fast. While it waits for a listener it opens the path
  // again at each try (a plugin may replace its socket); once one accepts, that socket is the
  // one dialled, until a connection to it fails while another socket (or none) is at the name:
  // then the path is opened again and the wait for a listener starts anew, within `timeout`.
  // Blocks; Unavailable or DeadlineExceeded on failure, FailedPrecondition when a symlink or
  // anything else that is not a socket is at the path (or in a folder's place on it), Cancelled
  // after Cancel. Call once, before the RPCs.
  absl::Status Dial(absl::Duration timeout);

  // GetInfo and NotifyRegistrationStatus: unary calls with a deadline of `timeout`. Block; the
  // plugin's gRPC status on failure, Cancelled after Cancel. Only after a successful Dial.
  // Neither waits for a lost connection to come back: a plugin that is gone fails the call at
  // once. Upstream's newest sets WaitForReady on the notification (TestNotifyPlugin); this
  // client is connected when Dial returns and bound to the socket file it opened, so waiting
  // would reach no plugin that replaced its socket, and would only hold a crashed plugin's
  // deregistration for the whole deadline.
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

  // OpenSocket opens the socket at socket_path_ into socket_: NotFound when nothing is there,
  // FailedPrecondition when something other than a socket is, or a symlink on the way.
  absl::Status OpenSocket();
  // LeftItsName: socket_ is no longer what is at socket_path_ (nothing is, or another file);
  // false when that cannot be told.
  bool LeftItsName() const;
  // AwaitListener opens the socket into socket_ until a process accepts connections on it, for
  // no more than kRefusedGrace and not past `deadline` (see Dial).
  absl::Status AwaitListener(absl::Time deadline);
  // Connect dials socket_ and waits until `deadline` for the channel to be ready: true when it
  // is, false (the channel dropped) when a connection failed and socket_ LeftItsName.
  absl::StatusOr<bool> Connect(absl::Time deadline, absl::Duration timeout);

  const std::filesystem::path registry_dir_;
  const std::filesystem::path socket_path_;
  // The socket opened (O_PATH), which the channel dials through /proc/self/fd: declared before
  // the channel, so that it stays open for as long as the channel may connect.
  Fd socket_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pluginregistration::Registration::Stub> stub_;

  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // The context of the call in progress, for Cancel; null between calls.
  grpc::ClientContext* active_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace devmgr::pluginwatcher
