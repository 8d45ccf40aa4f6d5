// LockFile: one `devmgr serve` per root folder. The daemon takes an exclusive flock on
// <root>/devmgr.lock before it touches a socket, and holds it until it exits (the kernel drops
// it even after SIGKILL), so a second daemon refuses to start instead of stealing the sockets
// of the first. The file holds the owner's PID for the error message; it is never removed,
// since removing a lock file races with the next owner.
#pragma once

#include <filesystem>
#include <memory>

#include "absl/status/statusor.h"

namespace devmgr::node {

class LockFile {
 public:
  // Acquire creates the file (mode 0600, not following a symlink) and locks it without
  // waiting. RootHeldError naming the holder's PID when another process holds it; the
  // system call's error otherwise (common/errno_status.h).
  static absl::StatusOr<std::unique_ptr<LockFile>> Acquire(const std::filesystem::path& path);
  ~LockFile();
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

 private:
  explicit LockFile(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace devmgr::node
