// Request rate limiting for the PodResources socket: token buckets (golang.org/x/time/rate's
// semantics, which upstream's grpc/ratelimit.go uses) kept either once for the whole server,
// as upstream does, or once per client, so that one noisy client cannot starve the others.
#pragma once

#include <cstddef>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/token_bucket.h"

namespace devmgr::podresources {

// Upstream's defaults (pkg/kubelet/apis/podresources/grpc/ratelimit.go).
inline constexpr double kDefaultQps = 100;
inline constexpr int kDefaultBurstTokens = 10;
// The status message of a rejected request, exactly as upstream.
inline constexpr char kRateLimitedMessage[] = "rejected by rate limit";

struct RateLimitOptions {
  // Sustained requests per second; 0 or less turns limiting off.
  double qps = kDefaultQps;
  // Requests allowed at once after an idle period.
  int burst = kDefaultBurstTokens;
  // true: one bucket per client (see ClientGate for what a client is); false: one bucket for
  // the whole server, as upstream.
  bool per_client = true;
};

// RateLimiter decides whether a request from a client may proceed. Thread-safe; never blocks
// beyond its own short critical section.
class RateLimiter {
 public:
  // `clock` must outlive the limiter.
  RateLimiter(const RateLimitOptions& options, const Clock& clock);

  // Allow takes a token from `client`'s bucket (or the server's, if not per client).
  bool Allow(const std::string& client) ABSL_LOCKS_EXCLUDED(mu_);

  // Buckets currently kept, for tests.
  size_t BucketCountForTest() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Past this many clients, buckets that have refilled completely are dropped: a full bucket
  // is indistinguishable from a new one, so forgetting it changes no decision.
  static constexpr size_t kSweepThreshold = 1024;

  const RateLimitOptions options_;
  const Clock& clock_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, TokenBucket> buckets_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::podresources
