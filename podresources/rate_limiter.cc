#include "podresources/rate_limiter.h"

#include <algorithm>

namespace devmgr::podresources {

TokenBucket::TokenBucket(double qps, int burst, absl::Time now)
    : qps_(qps), burst_(burst), tokens_(burst), last_(now) {}

double TokenBucket::TokensAt(absl::Time now) const {
  const double elapsed = std::max(0.0, absl::ToDoubleSeconds(now - last_));
  return std::min(burst_, tokens_ + elapsed * qps_);
}

bool TokenBucket::Allow(absl::Time now) {
  tokens_ = TokensAt(now);
  // Refilled from now on even when the clock went back: only the time it went back is lost.
  last_ = now;
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

bool TokenBucket::Full(absl::Time now) const { return TokensAt(now) >= burst_; }

RateLimiter::RateLimiter(const RateLimitOptions& options, const Clock& clock)
    : options_(options), clock_(clock) {}

bool RateLimiter::Allow(const std::string& client) {
  if (options_.qps <= 0) return true;
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  if (buckets_.size() >= kSweepThreshold) {
    absl::erase_if(buckets_, [now](const auto& entry) { return entry.second.Full(now); });
  }
  const std::string& key = options_.per_client ? client : std::string();
  auto it = buckets_.try_emplace(key, options_.qps, options_.burst, now).first;
  return it->second.Allow(now);
}

size_t RateLimiter::BucketCountForTest() const {
  absl::MutexLock lock(&mu_);
  return buckets_.size();
}

}  // namespace devmgr::podresources
