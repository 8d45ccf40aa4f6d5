#include "bench/driver/timed_calls.h"

#include <cstdint>

namespace devmgr::bench {

absl::StatusOr<double> CallsPerSecond(double seconds, const std::function<absl::Status()>& call) {
  const auto start = Clock::now();
  int64_t calls = 0;
  while (MicrosSince(start) < seconds * 1e6) {
    if (absl::Status status = call(); !status.ok()) return status;
    ++calls;
  }
  return static_cast<double>(calls) / (MicrosSince(start) / 1e6);
}

}  // namespace devmgr::bench
