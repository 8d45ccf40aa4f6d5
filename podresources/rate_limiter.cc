#include "podresources/rate_limiter.h"

namespace devmgr::podresources {

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
