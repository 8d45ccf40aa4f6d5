// ClosingPeer: a unix socket at a path whose process accepts every connection and closes it at
// once, as a frozen or foreign peer that is no gRPC server does for a gRPC channel: each of the
// channel's connections fails, and a test connection finds the socket served. Counts the
// connections it accepted.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <thread>

namespace devmgr::testing {

class ClosingPeer {
 public:
  explicit ClosingPeer(const std::filesystem::path& path);
  ~ClosingPeer();
  ClosingPeer(const ClosingPeer&) = delete;
  ClosingPeer& operator=(const ClosingPeer&) = delete;

  bool listening() const { return listen_fd_ >= 0; }
  int64_t accepted() const { return accepted_.load(); }

 private:
  void Run();

  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::atomic<int64_t> accepted_{0};
  std::thread thread_;
};

}  // namespace devmgr::testing
