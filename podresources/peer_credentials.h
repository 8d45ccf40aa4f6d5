// Who is calling: the kernel's SO_PEERCRED credentials (uid, gid, pid) of each client that
// connects to the PodResources unix socket.
//
// gRPC 1.51's public C++ API does not expose the peer's credentials on a unix socket: the
// server side peer() is "unix:" with no path (clients' sockets are unnamed), and the auth
// context of insecure credentials carries only the security level. So the listener accepts
// connections itself, reads SO_PEERCRED on each accepted socket, and hands the socket to the
// gRPC server (common/connection_acceptor.h). gRPC then names that connection's peer "fd:<N>",
// which is how a request is mapped back to its credentials.
//
// Limits, stated plainly: the credentials are those of the process that connected, taken at
// connect time (a descriptor passed to another process keeps the first process's identity);
// a pid may be reused after its process exits; and a process can open many connections, all
// of which share its identity (which is what a per-client limit wants).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/logging.h"

namespace grpc {
class Server;
}

namespace devmgr {
class ConnectionAcceptor;
}  // namespace devmgr

namespace devmgr::podresources {

struct PeerCredentials {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
};

// CredentialsListener owns the listening unix socket and its acceptor.
class CredentialsListener {
 public:
  // Listen binds `socket_path` (creating its folder if missing and removing a stale socket
  // first); its mode follows the umask, as the kubelet's does.
  // The listener accepts nothing until Start.
  static absl::StatusOr<std::unique_ptr<CredentialsListener>> Listen(
      const std::filesystem::path& socket_path, LoggerPtr logger);
  // Stops the thread, closes the socket and removes the socket file.
  ~CredentialsListener();
  CredentialsListener(const CredentialsListener&) = delete;
  CredentialsListener& operator=(const CredentialsListener&) = delete;

  // Start accepts connections on a thread of its own and hands each to `server`, which must
  // have been started and must stay alive until Stop returns. Call once.
  void Start(grpc::Server& server);

  // Stop ends accepting (connections already handed over stay with the server); idempotent.
  void Stop();

  // Lookup: the credentials of the connection gRPC calls `peer` (ServerContext::peer()).
  // Thread-safe, never blocks beyond a short critical section.
  std::optional<PeerCredentials> Lookup(const std::string& peer) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit CredentialsListener(std::filesystem::path socket_path);
  // Remember: records the credentials of the accepted connection `fd`; false when they cannot
  // be read (the connection is closed).
  bool Remember(int fd) ABSL_LOCKS_EXCLUDED(mu_);

  const std::filesystem::path socket_path_;
  mutable absl::Mutex mu_;
  // By descriptor number. A number is reused only after gRPC closed its previous connection,
  // and the entry is overwritten before the new connection is handed over.
  absl::flat_hash_map<int, PeerCredentials> by_fd_ ABSL_GUARDED_BY(mu_);
  // Last: stops first.
  std::unique_ptr<ConnectionAcceptor> acceptor_;
};

}  // namespace devmgr::podresources
