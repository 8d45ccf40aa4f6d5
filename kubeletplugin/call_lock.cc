#include "kubeletplugin/call_lock.h"

#include <fcntl.h>
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
  // An open file description lock over the whole file, the lock etcd's fileutil.LockFile takes
  // on Linux for upstream's helper: a flock(2) and such a lock do not exclude each other, so a
  // Go driver's pod and a devmgr one in the same rolling update would both get in.
  struct flock whole {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  while (::fcntl(fd, F_OFD_SETLKW, &whole) != 0) {
    if (errno == EINTR) continue;
    const int error = errno;
    ::close(fd);
    return ErrnoStatus(error, "lock file: cannot lock", lock_file_);
  }
  return Guard(nullptr, fd);
}

}  // namespace devmgr::kubeletplugin
