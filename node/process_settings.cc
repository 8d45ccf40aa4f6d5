#include "node/process_settings.h"

#include <malloc.h>

#include <cstdlib>

#include "absl/synchronization/mutex.h"

namespace devmgr::node {

void LimitMallocArenas() {
  if (std::getenv("GLIBC_TUNABLES") != nullptr || std::getenv("MALLOC_ARENA_MAX") != nullptr) {
    return;
  }
  mallopt(M_ARENA_MAX, 2);
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
}

void IgnoreLockOrderCycles() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace devmgr::node
