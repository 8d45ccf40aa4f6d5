#include "common/clock.h"

#include <chrono>

#include "absl/time/clock.h"

namespace devmgr {
namespace {

class SystemClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

class SteadyClock final : public Clock {
 public:
  absl::Time Now() const override {
    return wall_at_start_ + absl::FromChrono(std::chrono::steady_clock::now() - steady_at_start_);
  }

 private:
  const absl::Time wall_at_start_ = absl::Now();
  const std::chrono::steady_clock::time_point steady_at_start_ = std::chrono::steady_clock::now();
};

}  // namespace

Clock& RealClock() {
  static SystemClock* const clock = new SystemClock();  // never destroyed: safe at exit
  return *clock;
}

Clock& MonotonicClock() {
  static SteadyClock* const clock = new SteadyClock();  // never destroyed: safe at exit
  return *clock;
}

}  // namespace devmgr
