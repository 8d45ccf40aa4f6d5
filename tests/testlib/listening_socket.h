// ListeningSocket: a unix socket bound at a path (its folder created) and listening while the
// object lives, that never accepts: a plugin's socket file for a test that fakes the plugin
// behind it, or a peer that never answers; or, released, a socket handed to a server that
// accepts on it.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <utility>

namespace devmgr::testing {

class ListeningSocket {
 public:
  explicit ListeningSocket(const std::filesystem::path& path)
      : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    std::error_code ignored;
    std::filesystem::create_directories(path.parent_path(), ignored);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    listening_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                 ::listen(fd_, 64) == 0;
  }
  ~ListeningSocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  ListeningSocket(const ListeningSocket&) = delete;
  ListeningSocket& operator=(const ListeningSocket&) = delete;

  bool listening() const { return listening_; }

  // Release: the socket, which the caller owns from then on; the path stays.
  int Release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
  bool listening_ = false;
};

}  // namespace devmgr::testing
