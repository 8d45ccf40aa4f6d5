#include "common/clock.h"

#include "absl/time/clock.h"

namespace devmgr {
namespace {

class SystemClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

}  // namespace

Clock& RealClock() {
  static SystemClock* const clock = new SystemClock();  // never destroyed: safe at exit
  return *clock;
}

}  // namespace devmgr
