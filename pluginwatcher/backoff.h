// ExponentialBackoff: how long the watcher waits before it retries an operation on a socket path
// that failed (upstream's pkg/util/goroutinemap/exponentialbackoff): the first failure waits
// `initial`, each further one twice as long as the one before, never more than `max`. A plain
// value; the owner's lock guards it.
#pragma once

#include <algorithm>

#include "absl/time/time.h"

namespace devmgr::pluginwatcher {

class ExponentialBackoff {
 public:
  ExponentialBackoff(absl::Duration initial, absl::Duration max) : initial_(initial), max_(max) {}

  // Update records a failure at `now` and lengthens the wait.
  void Update(absl::Time now) {
    wait_ = wait_ == absl::ZeroDuration() ? initial_ : std::min(wait_ * 2, max_);
    last_error_ = now;
  }

  // RetryAt: the earliest time for the next attempt.
  absl::Time RetryAt() const { return last_error_ + wait_; }

  absl::Duration wait() const { return wait_; }

 private:
  absl::Duration initial_;
  absl::Duration max_;
  absl::Duration wait_ = absl::ZeroDuration();
  absl::Time last_error_ = absl::InfinitePast();
};

}  // namespace devmgr::pluginwatcher
