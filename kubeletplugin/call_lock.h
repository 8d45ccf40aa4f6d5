// CallLock: how a DRA driver's prepare and unprepare calls are serialised, as upstream's helper
// does by default. Within one process a mutex is enough; in a rolling update the old and the new
// pod of the driver both serve, so the lock is an exclusive lock on a file both see
// ("serialize.lock" in the driver's data folder), held for the whole call. It is both locks a Go
// driver built on upstream's helper may take there (etcd's fileutil.LockFile: an open file
// description lock where the kernel has them, a flock(2) where it does not), which ignore each
// other: so a Go driver on either kernel and a devmgr one exclude each other too. Drivers that
// handle concurrent calls themselves do not take it.
//
// Thread-safety: Lock may be called from any thread at once; a Guard belongs to its caller.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace devmgr::kubeletplugin {

// The lock file of a rolling update, in the driver's data folder.
inline constexpr char kSerializeLockFile[] = "serialize.lock";

class CallLock {
 public:
  // Held until destroyed.
  class Guard {
   public:
    Guard(Guard&&) noexcept;
    Guard& operator=(Guard&&) = delete;
    // Releases what Lock took (the analysis cannot follow a lock handed to an object).
    ~Guard() ABSL_NO_THREAD_SAFETY_ANALYSIS;

   private:
    friend class CallLock;
    Guard(absl::Mutex* mutex, int fd) : mutex_(mutex), fd_(fd) {}
    absl::Mutex* mutex_;
    int fd_;
  };

  // An empty `lock_file`: the lock is a mutex of this object.
  explicit CallLock(std::filesystem::path lock_file = {}) : lock_file_(std::move(lock_file)) {}

  // Lock blocks until the call may go on. With a file, the file is created (mode 0666, less the
  // umask) if missing; an error opening or locking it is "lock file: ...". The other pod may hold
  // the file's lock for as long as its driver takes: with `ended`, Lock tries again every few
  // milliseconds while it does, and gives up with Cancelled once `ended` says the call ended
  // (the kubelet's deadline, the helper's stop); without, it waits in the kernel.
  absl::StatusOr<Guard> Lock(const std::function<bool()>& ended = nullptr)
      ABSL_NO_THREAD_SAFETY_ANALYSIS;

 private:
  const std::filesystem::path lock_file_;
  absl::Mutex mutex_;
};

}  // namespace devmgr::kubeletplugin
