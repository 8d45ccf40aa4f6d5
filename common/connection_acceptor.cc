#include "common/connection_acceptor.h"

#include <fcntl.h>
#include <grpcpp/server.h>
#include <grpcpp/server_posix.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errno_status.h"

namespace devmgr {
namespace {

// Errors of accept that say the listening socket itself is unusable, for good.
bool ListenerFailed(int error) {
  return error == EBADF || error == EINVAL || error == ENOTSOCK || error == EOPNOTSUPP ||
         error == EFAULT;
}

// Errors of accept that say the process or the system is out of descriptors or memory: the
// connection stays queued, so trying again at once would spin.
bool OutOfResources(int error) {
  return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ConnectionAcceptor>> ConnectionAcceptor::Create(int listen_fd,
                                                                               Options options) {
  auto fail = [listen_fd](int error, absl::string_view what) {
    ::close(listen_fd);
    return ErrnoStatus(error, what);
  };
  int listening = 0;
  socklen_t size = sizeof(listening);
  if (::getsockopt(listen_fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0) {
    return fail(errno, absl::StrCat(options.name, ": not a socket"));
  }
  if (listening == 0) {
    ::close(listen_fd);
    return absl::InvalidArgumentError(
        absl::StrCat(options.name, ": the socket does not listen for connections"));
  }
  // The loop accepts only once poll says a connection waits, but one that gave up meanwhile
  // must not block it.
  const int flags = ::fcntl(listen_fd, F_GETFL);
  if (flags < 0 || ::fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return fail(errno, absl::StrCat(options.name, ": fcntl"));
  }
  const int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) return fail(errno, "eventfd");
  return std::unique_ptr<ConnectionAcceptor>(
      new ConnectionAcceptor(listen_fd, wake_fd, std::move(options)));
}

ConnectionAcceptor::ConnectionAcceptor(int listen_fd, int wake_fd, Options options)
    : listen_fd_(listen_fd), wake_fd_(wake_fd), options_(std::move(options)) {}

ConnectionAcceptor::~ConnectionAcceptor() {
  Stop();
  ::close(wake_fd_);
}

void ConnectionAcceptor::Start(grpc::Server& server) {
  thread_ = std::thread([this, &server] { AcceptLoop(&server); });
}

void ConnectionAcceptor::Stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t written = ::write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  // After the loop ended: it polls and accepts on the socket.
  if (listen_fd_ >= 0) ::close(std::exchange(listen_fd_, -1));
}

bool ConnectionAcceptor::WaitForStop(absl::Duration timeout) const {
  pollfd wake = {wake_fd_, POLLIN, 0};
  return ::poll(&wake, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout))) > 0;
}

void ConnectionAcceptor::AcceptLoop(grpc::Server* server) {
  absl::Duration retry_delay;  // after the last accept that failed for want of resources
  absl::Status failed;
  while (failed.ok()) {
    // POLLRDHUP: a socket shut down for reading only polls readable with it, never hung up.
    pollfd fds[2] = {{listen_fd_, POLLIN | POLLRDHUP, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      failed = ErrnoStatus(errno, "poll");
      break;
    }
    if ((fds[1].revents & POLLIN) != 0) return;
    if ((fds[0].revents & POLLNVAL) != 0) {
      failed = ErrnoStatus(EBADF, "accept");
      break;
    }
    absl::StatusOr<absl::Duration> wait =
        AcceptOne(server, (fds[0].revents & (POLLHUP | POLLERR | POLLRDHUP)) != 0, retry_delay);
    if (!wait.ok()) {
      failed = wait.status();
    } else if (*wait > absl::ZeroDuration() && WaitForStop(*wait)) {
      return;
    }
  }
  if (options_.on_failure) {
    options_.on_failure(failed);
  } else {
    DEVMGR_LOG(options_.logger, err, "Stopped accepting connections", "server", options_.name,
               "err", failed);
  }
}

absl::StatusOr<absl::Duration> ConnectionAcceptor::AcceptOne(grpc::Server* server, bool hung_up,
                                                             absl::Duration& retry_delay) {
  // gRPC's endpoint expects a non-blocking socket.
  const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd >= 0) {
    retry_delay = absl::ZeroDuration();
    if (options_.on_accept && !options_.on_accept(fd)) {
      ::close(fd);
    } else {
      grpc::AddInsecureChannelFromFd(server, fd);  // gRPC owns fd from here on
    }
    return absl::ZeroDuration();
  }
  const int error = errno;
  if (ListenerFailed(error)) return ErrnoStatus(error, "accept");
  // A listening socket that was shut down polls as hung up and has nothing to accept.
  if (hung_up && (error == EAGAIN || error == EWOULDBLOCK)) {
    return absl::UnavailableError("accept: the listening socket was shut down");
  }
  if (!OutOfResources(error)) return absl::ZeroDuration();  // a client that gave up; the next
  retry_delay = std::clamp(retry_delay * 2, kMinAcceptRetry, kMaxAcceptRetry);
  DEVMGR_LOG(options_.logger, err, "Accept failed, retrying", "server", options_.name, "err",
             ErrnoStatus(error, "accept"), "retryIn", absl::FormatDuration(retry_delay));
  return retry_delay;
}

}  // namespace devmgr
