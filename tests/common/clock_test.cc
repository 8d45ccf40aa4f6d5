// MonotonicClock: starts at the system clock's time and moves on as the kernel's monotonic clock
// does, never back.
#include "common/clock.h"

#include <gtest/gtest.h>

#include <chrono>

#include "absl/time/clock.h"

namespace devmgr {
namespace {

TEST(ClockTest, TheMonotonicClockStartsAtTheSystemClocksTime) {
  const absl::Time before = absl::Now();
  const absl::Time read = MonotonicClock().Now();
  // Its first use may have been earlier in this process; the test takes well under a minute.
  EXPECT_LE(read, absl::Now());
  EXPECT_GT(read, before - absl::Minutes(1));
}

TEST(ClockTest, TheMonotonicClockMovesAsTheSteadyClockDoesAndNeverBack) {
  const Clock& clock = MonotonicClock();
  const auto steady_before = std::chrono::steady_clock::now();
  const absl::Time first = clock.Now();
  absl::Time last = first;
  // Long enough for a few scheduler ticks, bounded by the reads rather than by a sleep.
  while (last - first < absl::Milliseconds(20)) {
    const absl::Time now = clock.Now();
    ASSERT_GE(now, last);
    last = now;
  }
  const auto steady_after = std::chrono::steady_clock::now();
  // It moved no faster than the steady clock read around it.
  EXPECT_LE(last - first, absl::FromChrono(steady_after - steady_before));
}

}  // namespace
}  // namespace devmgr
