#include "node/process_settings.h"

#include <malloc.h>
#include <sys/resource.h>

#include <cstdlib>

#include "absl/synchronization/mutex.h"

namespace devmgr::node {

void LimitMallocArenas() {
  if (std::getenv("GLIBC_TUNABLES") != nullptr || std::getenv("MALLOC_ARENA_MAX") != nullptr) {
    return;
  }
  mallopt(M_ARENA_MAX, 2);
  mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 2 * 1024 * 1024);
}

void RaiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  // A failure leaves the soft limit as it was.
  static_cast<void>(::setrlimit(RLIMIT_NOFILE, &limit));
}

void IgnoreLockOrderCycles() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace devmgr::node
