// SliceCleanup: when the node's ResourceSlices are wiped, upstream's pending wipes of the DRA
// plugin manager (pkg/kubelet/cm/dra/plugin). At start every slice of the node is wiped; after
// that a driver's slices are wiped once it has had no connected endpoint for the wiping delay
// (30 s: a container restart of the driver keeps its slices, a driver that is gone does not
// leave pods scheduled against devices nobody prepares). A driver that becomes usable again
// cancels its pending wipe, and the retries of one in progress.
//
// Wipes run on the cleanup's own thread, retried with upstream's backoff (1 s, ×2, jitter 0.2,
// cap 5 min, 100 steps) until the wiper succeeds or answers NotFound.
//
// Thread-safety: every method may be called from any thread at once; none blocks on the wiper.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/backoff.h"
#include "common/clock.h"
#include "common/logging.h"
#include "dra/slice_wiper.h"

namespace devmgr::dra {

// Upstream's defaultWipingDelay.
inline constexpr absl::Duration kDefaultWipingDelay = absl::Seconds(30);

// The retries of one wipe (upstream's numbers).
inline Backoff WipeBackoff() {
  return Backoff{.duration = absl::Seconds(1),
                 .factor = 2.0,
                 .jitter = 0.2,
                 .steps = 100,
                 .cap = absl::Minutes(5)};
}

struct SliceCleanupOptions {
  // Not owned; required; must outlive the SliceCleanup.
  SliceWiper* wiper = nullptr;
  absl::Duration wiping_delay = kDefaultWipingDelay;
  Backoff backoff = WipeBackoff();
  // Time source of the delays; null means MonotonicClock(). Not owned. With another clock the
  // thread still waits in real time: call Wake() after moving the clock.
  const Clock* clock = nullptr;
  // Returns a number in [0, 1) for the backoff's jitter; empty: a random one.
  std::function<double()> random;
  LoggerPtr logger;
};

class SliceCleanup {
 public:
  // Starts the thread, which wipes every slice of the node at once.
  explicit SliceCleanup(SliceCleanupOptions options);
  // Cancels every pending wipe and retry; a wiper call in progress finishes first.
  ~SliceCleanup();
  SliceCleanup(const SliceCleanup&) = delete;
  SliceCleanup& operator=(const SliceCleanup&) = delete;

  // DriverUsable tells whether `driver_name` has an endpoint connected now. Not usable schedules
  // a wipe of its slices a wiping delay from now, unless one is already pending (the first time
  // still applies); usable cancels it.
  void DriverUsable(const std::string& driver_name, bool usable) ABSL_LOCKS_EXCLUDED(mu_);

  // Wake makes the thread look at the clock again (for tests that move a fake clock).
  void Wake() ABSL_LOCKS_EXCLUDED(mu_);

  // NextAttempt: when the next attempt of a wipe of `driver_name` ("" for the start-up wipe of
  // every driver) is due; std::nullopt when none is scheduled or being retried.
  std::optional<absl::Time> NextAttempt(const std::string& driver_name) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Wipe {
    absl::Time due;
    Backoff backoff;
    // Tells a retry from a wipe scheduled again after a cancellation.
    uint64_t id = 0;
  };

  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // Attempt calls the wiper for the wipe `id` of `driver_name` (without the lock) and, on a
  // failure, schedules its next attempt or gives up.
  void Attempt(const std::string& driver_name, uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Schedule adds a wipe due at `due` unless one is pending.
  void Schedule(const std::string& driver_name, absl::Time due) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SliceCleanupOptions options_;
  const Clock& clock_;
  mutable absl::Mutex mu_;
  // Driver name ("" for every driver) -> its next attempt.
  std::map<std::string, Wipe> pending_ ABSL_GUARDED_BY(mu_);
  // The drivers usable at their last report: one that stops being usable is news (info); one
  // that registers, whose endpoint is not connected yet, is not (debug).
  std::set<std::string> usable_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Bumped by Wake and by every change of pending_, so that the thread waits again.
  uint64_t wakeups_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::mt19937_64 random_ ABSL_GUARDED_BY(mu_){std::random_device{}()};
  std::thread thread_;
};

}  // namespace devmgr::dra
