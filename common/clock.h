// Clock: the time source of everything that waits or expires (the endpoint stop grace period,
// back-off), injected so that tests move time by hand instead of sleeping.
#pragma once

#include "absl/time/time.h"

namespace devmgr {

class Clock {
 public:
  virtual ~Clock() = default;
  // Now is thread-safe and never blocks.
  virtual absl::Time Now() const = 0;
};

// RealClock is the system clock; the returned object lives for the whole program.
Clock& RealClock();

}  // namespace devmgr
