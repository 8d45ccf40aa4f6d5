#include "common/token_bucket.h"

#include <algorithm>

namespace devmgr {

TokenBucket::TokenBucket(double qps, int burst, absl::Time now)
    : qps_(qps), burst_(burst), tokens_(burst), last_(now) {}

double TokenBucket::TokensAt(absl::Time now) const {
  const double elapsed = std::max(0.0, absl::ToDoubleSeconds(now - last_));
  return std::min(burst_, tokens_ + elapsed * qps_);
}

void TokenBucket::Refill(absl::Time now) {
  tokens_ = TokensAt(now);
  // Refilled from now on even when the clock went back: only the time it went back is lost.
  last_ = now;
}

bool TokenBucket::Allow(absl::Time now) {
  Refill(now);
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

absl::Duration TokenBucket::Reserve(absl::Time now) {
  Refill(now);
  tokens_ -= 1;
  return tokens_ >= 0 ? absl::ZeroDuration() : absl::Seconds(-tokens_ / qps_);
}

bool TokenBucket::Full(absl::Time now) const { return TokensAt(now) >= burst_; }

}  // namespace devmgr
