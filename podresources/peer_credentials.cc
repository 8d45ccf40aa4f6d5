#include "podresources/peer_credentials.h"

#include <fcntl.h>
#include <grpcpp/server.h>
#include <grpcpp/server_posix.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/errno_status.h"
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
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return ErrnoStatus(errno, "socket");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = socket_path.string();
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API needs it.
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd, SOMAXCONN) != 0) {
    const int error = errno;
    ::close(fd);
    return ErrnoStatus(error, absl::StrCat("listen on ", path));
  }
  const int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) {
    const int error = errno;
    ::close(fd);
    return ErrnoStatus(error, "eventfd");
  }
  return std::unique_ptr<CredentialsListener>(
      new CredentialsListener(fd, wake_fd, socket_path, std::move(logger)));
}

CredentialsListener::CredentialsListener(int listen_fd, int wake_fd,
                                         std::filesystem::path socket_path, LoggerPtr logger)
    : listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      socket_path_(std::move(socket_path)),
      logger_(std::move(logger)) {}

CredentialsListener::~CredentialsListener() {
  Stop();
  ::close(listen_fd_);
  ::close(wake_fd_);
  std::error_code ignored;
  std::filesystem::remove(socket_path_, ignored);
}

void CredentialsListener::Start(grpc::Server& server) {
  thread_ = std::thread([this, &server] { AcceptLoop(&server); });
}

void CredentialsListener::Stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(wake_fd_, &one, sizeof(one));
  thread_.join();
}

bool CredentialsListener::WaitForStop(absl::Duration timeout) const {
  pollfd wake = {wake_fd_, POLLIN, 0};
  return ::poll(&wake, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout))) > 0;
}

void CredentialsListener::AcceptLoop(grpc::Server* server) {
  absl::Duration retry_delay;
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      DEVMGR_LOG(logger_, info, "PodResources accept loop failed", "err", std::strerror(errno));
      return;
    }
    if ((fds[1].revents & POLLIN) != 0) return;
    // gRPC's endpoint expects a non-blocking socket.
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      const int error = errno;
      if (error != EMFILE && error != ENFILE && error != ENOBUFS && error != ENOMEM) {
        continue;  // EAGAIN, or a client that gave up; accept the next one
      }
      // Out of descriptors or memory: the connection stays queued, so retrying at once would
      // spin. Back off as grpc-go's server does, doubling from 5 ms up to 1 s.
      retry_delay = std::clamp(retry_delay * 2, kMinAcceptRetry, kMaxAcceptRetry);
      DEVMGR_LOG(logger_, err, "PodResources accept failed, retrying", "err", std::strerror(error),
                 "retryIn", absl::FormatDuration(retry_delay));
      if (WaitForStop(retry_delay)) return;
      continue;
    }
    retry_delay = absl::ZeroDuration();
    ucred credentials{};
    socklen_t size = sizeof(credentials);
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) {
      ::close(fd);
      continue;
    }
    {
      absl::MutexLock lock(&mu_);
      by_fd_[fd] = PeerCredentials{credentials.uid, credentials.gid, credentials.pid};
    }
    grpc::AddInsecureChannelFromFd(server, fd);  // gRPC owns fd from here on
  }
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
