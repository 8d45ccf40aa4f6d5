// ScopedUmask: the process's umask set for one test (a daemon the test starts inherits it) and
// put back after.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

namespace devmgr::testing {

class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : previous_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(previous_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  mode_t previous_;
};

}  // namespace devmgr::testing
