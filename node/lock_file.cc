#include "node/lock_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/errno_status.h"
#include "node/root_held.h"

namespace devmgr::node {

absl::StatusOr<std::unique_ptr<LockFile>> LockFile::Acquire(const std::filesystem::path& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return ErrnoStatus(errno, "cannot open lock file", path);
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    std::string holder = "another process";
    char buffer[32] = {};
    if (error == EWOULDBLOCK && pread(fd, buffer, sizeof(buffer) - 1, 0) > 0) {
      int pid = 0;
      if (absl::SimpleAtoi(absl::StripAsciiWhitespace(buffer), &pid)) {
        holder = absl::StrCat("process ", pid);
      }
    }
    close(fd);
    if (error == EWOULDBLOCK) {
      return RootHeldError(absl::StrCat("another devmgr serve (", holder, ") holds ", path.string(),
                                        "; stop it first"));
    }
    return ErrnoStatus(error, "cannot lock", path);
  }
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 ||
      pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int error = errno;
    close(fd);
    return ErrnoStatus(error, "cannot write lock file", path);
  }
  return std::unique_ptr<LockFile>(new LockFile(fd));
}

LockFile::~LockFile() { close(fd_); }

}  // namespace devmgr::node
