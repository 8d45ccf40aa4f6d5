#include "common/token_bucket.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace devmgr {

TokenBucket::TokenBucket(double qps, int burst, absl::Time now)
    : qps_(qps), burst_(burst), tokens_(burst), last_(now), last_act_(now) {}

absl::Duration TokenBucket::DurationOfTokens(double tokens) const {
  // x/time/rate's arithmetic: nanoseconds as a double, truncated to whole ones, as Go converts
  // a float to a Duration; beyond Go's longest Duration, that one.
  const double nanoseconds = tokens / qps_ * 1e9;
  if (nanoseconds >= static_cast<double>(std::numeric_limits<int64_t>::max())) {
    return absl::Nanoseconds(std::numeric_limits<int64_t>::max());
  }
  return absl::Nanoseconds(static_cast<int64_t>(nanoseconds));
}

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
  const absl::Duration wait = tokens_ >= 0 ? absl::ZeroDuration() : DurationOfTokens(-tokens_);
  last_act_ = now + wait;
  return wait;
}

void TokenBucket::CancelReservation(absl::Time act_at, absl::Time now) {
  if (act_at < now) return;
  // The reservations made after this one took their tokens from behind it: those stay taken
  // (and no more than its one token comes back when the clock went back between them).
  const double restored = std::min(1.0, 1 - absl::ToDoubleSeconds(last_act_ - act_at) * qps_);
  if (restored <= 0) return;
  Refill(now);
  tokens_ = std::min(burst_, tokens_ + restored);
  if (act_at == last_act_) {
    // The latest one gone, the one before it is the latest again, if it is still to act.
    const absl::Time before = act_at - DurationOfTokens(1);
    if (before >= now) last_act_ = before;
  }
}

bool TokenBucket::Full(absl::Time now) const { return TokensAt(now) >= burst_; }

}  // namespace devmgr
