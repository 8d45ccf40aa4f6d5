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

// RealClock is the system clock; the returned object lives for the whole program. Use it for
// times compared with timestamps from outside the process: a credential's expiry, a time read
// back from a file.
Clock& RealClock();

// MonotonicClock counts from the system clock's reading at its first use, moved on by the
// kernel's monotonic clock: setting the system clock (by hand, or an NTP step) neither shortens
// nor stretches a delay measured on it, as Go's monotonic readings do for the kubelet. Use it for
// delays that live and die inside the process. Lives for the whole program.
Clock& MonotonicClock();

}  // namespace devmgr
