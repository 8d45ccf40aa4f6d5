#include "kubeletplugin/call_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/errno_status.h"

namespace devmgr::kubeletplugin {
namespace {

// How long a call waits before it tries a held lock file again: doubling, up to the longest.
constexpr absl::Duration kFirstPause = absl::Milliseconds(1);
constexpr absl::Duration kLongestPause = absl::Milliseconds(20);

}  // namespace

CallLock::Guard::Guard(Guard&& other) noexcept
    : mutex_(std::exchange(other.mutex_, nullptr)), fd_(std::exchange(other.fd_, -1)) {}

CallLock::Guard::~Guard() {
  // Closing the file releases its lock.
  if (fd_ >= 0) ::close(fd_);
  if (mutex_ != nullptr) mutex_->Unlock();
}

absl::StatusOr<CallLock::Guard> CallLock::Lock(const std::function<bool()>& ended) {
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
  struct flock whole {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  // Without `ended` nothing ends the wait: the kernel's own waits, first come first served.
  // With it, tries again and again, asking between the tries.
  const bool wait = ended == nullptr;
  const std::function<int()> tries[] = {
      [&] { return ::flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB); },
      [&] { return ::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &whole); }};
  absl::Duration pause = kFirstPause;
  for (const auto& take : tries) {
    while (take() != 0) {
      const int error = errno;
      if (error == EINTR) continue;
      const bool held = error == EWOULDBLOCK || error == EAGAIN || error == EACCES;
      if (wait || !held) {
        ::close(fd);  // releases what it holds
        return ErrnoStatus(error, "lock file: cannot lock", lock_file_);
      }
      if (ended()) {
        ::close(fd);
        return absl::CancelledError(
            absl::StrCat("the call ended while it waited for the lock on ", lock_file_.string()));
      }
      absl::SleepFor(pause);
      pause = std::min(pause * 2, kLongestPause);
    }
  }
  return Guard(nullptr, fd);
}

}  // namespace devmgr::kubeletplugin
