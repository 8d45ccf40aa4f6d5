#include "podresources/peer_credentials.h"

#include <sys/socket.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/connection_acceptor.h"
#include "common/unix_socket.h"

namespace devmgr::podresources {
namespace {

constexpr char kFdPeerPrefix[] = "fd:";

}  // namespace

absl::StatusOr<std::unique_ptr<CredentialsListener>> CredentialsListener::Listen(
    const std::filesystem::path& socket_path, LoggerPtr logger) {
  if (absl::Status valid = ValidateSocketPath(socket_path); !valid.ok()) return valid;
  // The kubelet creates <root>/pod-resources itself; so do we.
  std::error_code error_code;
  std::filesystem::create_directories(socket_path.parent_path(), error_code);
  if (error_code) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create ", socket_path.parent_path().string(), ": ", error_code.message()));
  }
  if (absl::Status removed = RemoveStaleSocket(socket_path); !removed.ok()) return removed;
  absl::StatusOr<int> fd = ListenUnix(socket_path);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<CredentialsListener> listener(new CredentialsListener(socket_path));
  ConnectionAcceptor::Options options;
  options.name = "PodResources";
  options.on_accept = [raw = listener.get()](int connection) { return raw->Remember(connection); };
  options.logger = std::move(logger);
  absl::StatusOr<std::unique_ptr<ConnectionAcceptor>> acceptor =
      ConnectionAcceptor::Create(*fd, std::move(options));
  if (!acceptor.ok()) return acceptor.status();
  listener->acceptor_ = *std::move(acceptor);
  return listener;
}

CredentialsListener::CredentialsListener(std::filesystem::path socket_path)
    : socket_path_(std::move(socket_path)) {}

CredentialsListener::~CredentialsListener() {
  acceptor_.reset();  // stops, and closes the socket
  std::error_code ignored;
  std::filesystem::remove(socket_path_, ignored);
}

void CredentialsListener::Start(grpc::Server& server) { acceptor_->Start(server); }

void CredentialsListener::Stop() { acceptor_->Stop(); }

bool CredentialsListener::Remember(int fd) {
  ucred credentials{};
  socklen_t size = sizeof(credentials);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) return false;
  absl::MutexLock lock(&mu_);
  by_fd_[fd] = PeerCredentials{credentials.uid, credentials.gid, credentials.pid};
  return true;
}

std::optional<PeerCredentials> CredentialsListener::Lookup(const std::string& peer) const {
  int fd = -1;
  if (!absl::StartsWith(peer, kFdPeerPrefix) ||
      !absl::SimpleAtoi(absl::string_view(peer).substr(sizeof(kFdPeerPrefix) - 1), &fd)) {
    return std::nullopt;
  }
  absl::MutexLock lock(&mu_);
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) return std::nullopt;
  return it->second;
}

}  // namespace devmgr::podresources
