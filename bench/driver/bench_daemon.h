// BenchDaemon: `devmgr serve` as a child process under a root folder, for `devmgr bench`. A
// child rather than the Daemon class in-process so that its resident memory (/proc/<pid>/status)
// is the daemon's alone, not the benchmark's plugins and clients, and so that a restart is a
// real process start. PodResources is unlimited (--podresources-qps 0) so that qps measures the
// server, not the rate limiter. Its metrics are served on a unix socket in the root, where the
// device gauges show what a snapshot made allocatable without listing every device.
#pragma once

#include <grpcpp/channel.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace devmgr::bench {

// RunThisProgram runs this program (the devmgr binary the benchmark runs in) with `args`, its
// output discarded, and waits for it to exit: Internal unless it exits 0.
absl::Status RunThisProgram(const std::vector<std::string>& args);

class BenchDaemon {
 public:
  // Start runs `devmgr serve --root-dir root` (this program) and returns once PodResources has
  // answered a List and the admin socket is dialed. Unavailable if that takes over `timeout`.
  static absl::StatusOr<std::unique_ptr<BenchDaemon>> Start(const std::filesystem::path& root,
                                                            absl::Duration timeout);
  // Sends SIGTERM and waits for the process.
  ~BenchDaemon();
  BenchDaemon(const BenchDaemon&) = delete;
  BenchDaemon& operator=(const BenchDaemon&) = delete;

  const std::shared_ptr<grpc::Channel>& admin() const { return admin_; }
  const std::shared_ptr<grpc::Channel>& podresources() const { return podresources_; }
  const std::filesystem::path& metrics_socket() const { return metrics_socket_; }

  // ResidentBytes is VmRSS of the daemon process; `peak` reads VmHWM instead.
  absl::StatusOr<int64_t> ResidentBytes(bool peak = false) const;

 private:
  BenchDaemon(pid_t pid, std::filesystem::path metrics_socket)
      : pid_(pid), metrics_socket_(std::move(metrics_socket)) {}

  pid_t pid_;
  std::filesystem::path metrics_socket_;
  std::shared_ptr<grpc::Channel> admin_;
  std::shared_ptr<grpc::Channel> podresources_;
};

}  // namespace devmgr::bench
