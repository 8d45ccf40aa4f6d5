#include "tests/testlib/closing_peer.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "tests/testlib/listening_socket.h"

namespace devmgr::testing {

ClosingPeer::ClosingPeer(const std::filesystem::path& path) {
  ListeningSocket socket(path);
  if (!socket.listening() || ::pipe2(stop_pipe_, O_CLOEXEC) != 0) return;
  listen_fd_ = socket.Release();
  thread_ = std::thread([this] { Run(); });
}

ClosingPeer::~ClosingPeer() {
  if (thread_.joinable()) {
    ::close(stop_pipe_[1]);  // the thread sees the pipe hung up
    thread_.join();
  }
  for (const int fd : {listen_fd_, stop_pipe_[0]}) {
    if (fd >= 0) ::close(fd);
  }
}

void ClosingPeer::Run() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    const int connection = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection >= 0) {
      ::close(connection);
      ++accepted_;
    }
  }
}

}  // namespace devmgr::testing
