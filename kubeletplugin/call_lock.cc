#include "kubeletplugin/call_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "common/errno_status.h"

namespace devmgr::kubeletplugin {

CallLock::Guard::Guard(Guard&& other) noexcept
    : mutex_(std::exchange(other.mutex_, nullptr)), fd_(std::exchange(other.fd_, -1)) {}

CallLock::Guard::~Guard() {
  // Closing the file releases its lock.
  if (fd_ >= 0) ::close(fd_);
  if (mutex_ != nullptr) mutex_->Unlock();
}

absl::StatusOr<CallLock::Guard> CallLock::Lock() {
  if (lock_file_.empty()) {
    mutex_.Lock();
    return Guard(&mutex_, -1);
  }
  const int fd = ::open(lock_file_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return ErrnoStatus(errno, "lock file: cannot open", lock_file_);
  // Both kinds of lock a Go driver may take on the file, which ignore each other: flock(2),
  // which etcd's fileutil.LockFile (upstream's helper's) takes on a kernel without open file
  // description locks, then an open file description lock over the whole file, which it takes
  // on every other. Always in that order, and every other holder takes one of them only, so no
  // two holders wait for each other.
  auto failed = [&](int error) {
    ::close(fd);
    return ErrnoStatus(error, "lock file: cannot lock", lock_file_);
  };
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) return failed(errno);
  }
  struct flock whole {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  while (::fcntl(fd, F_OFD_SETLKW, &whole) != 0) {
    if (errno != EINTR) return failed(errno);
  }
  return Guard(nullptr, fd);
}

}  // namespace devmgr::kubeletplugin
