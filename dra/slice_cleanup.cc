#include "dra/slice_cleanup.h"

#include <random>
#include <utility>

namespace devmgr::dra {
namespace {

// How a wipe is named in the log.
std::string Target(const std::string& driver_name) {
  return driver_name.empty() ? "every driver" : "driver " + driver_name;
}

}  // namespace

SliceCleanup::SliceCleanup(SliceCleanupOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : MonotonicClock()) {
  {
    absl::MutexLock lock(&mu_);
    Schedule("", clock_.Now());
  }
  thread_ = std::thread([this] { Run(); });
}

SliceCleanup::~SliceCleanup() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    pending_.clear();
  }
  thread_.join();
}

void SliceCleanup::Schedule(const std::string& driver_name, absl::Time due) {
  if (pending_.contains(driver_name)) return;
  pending_[driver_name] = Wipe{.due = due, .backoff = options_.backoff, .id = ++next_id_};
  ++wakeups_;
}

void SliceCleanup::DriverUsable(const std::string& driver_name, bool usable) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  if (usable) {
    usable_.insert(driver_name);
    if (pending_.erase(driver_name) > 0) {
      ++wakeups_;
      DEVMGR_LOG(options_.logger, debug, "Cancelled the ResourceSlice wipe", "driverName",
                 driver_name);
    }
    return;
  }
  const bool was_usable = usable_.erase(driver_name) > 0;
  if (!pending_.contains(driver_name)) {
    constexpr absl::string_view kGone =
        "DRA driver has no connected endpoint, its ResourceSlices will be wiped";
    if (was_usable) {
      DEVMGR_LOG(options_.logger, info, kGone, "driverName", driver_name, "delay",
                 options_.wiping_delay);
    } else {
      DEVMGR_LOG(options_.logger, debug, kGone, "driverName", driver_name, "delay",
                 options_.wiping_delay);
    }
  }
  Schedule(driver_name, clock_.Now() + options_.wiping_delay);
}

void SliceCleanup::Wake() {
  absl::MutexLock lock(&mu_);
  ++wakeups_;
}

std::optional<absl::Time> SliceCleanup::NextAttempt(const std::string& driver_name) const {
  absl::MutexLock lock(&mu_);
  auto it = pending_.find(driver_name);
  if (it == pending_.end()) return std::nullopt;
  return it->second.due;
}

void SliceCleanup::Run() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    auto next = pending_.end();
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (next == pending_.end() || it->second.due < next->second.due) next = it;
    }
    const absl::Duration wait =
        next == pending_.end() ? absl::InfiniteDuration() : next->second.due - clock_.Now();
    if (wait <= absl::ZeroDuration()) {
      Attempt(next->first, next->second.id);
      continue;
    }
    const uint64_t seen = wakeups_;
    auto changed = [this, seen]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || wakeups_ != seen; };
    mu_.AwaitWithTimeout(absl::Condition(&changed), wait);
  }
}

void SliceCleanup::Attempt(const std::string& driver_name, uint64_t id) {
  const std::string name = driver_name;  // the entry may go while the lock is released
  mu_.Unlock();
  const absl::Status status = options_.wiper->WipeResourceSlices(name);
  mu_.Lock();
  auto it = pending_.find(name);
  // Cancelled meanwhile (the driver came back, or the cleanup stops), or scheduled anew.
  if (it == pending_.end() || it->second.id != id) return;
  if (status.ok() || absl::IsNotFound(status)) {
    DEVMGR_LOG(options_.logger, info, "Deleted ResourceSlices", "target", Target(name));
    pending_.erase(it);
    return;
  }
  Backoff& backoff = it->second.backoff;
  if (backoff.steps <= 1) {
    DEVMGR_LOG(options_.logger, err, "Giving up deleting ResourceSlices", "target", Target(name),
               "err", status.message());
    pending_.erase(it);
    return;
  }
  const absl::Duration wait = backoff.Step([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return options_.random ? options_.random()
                           : std::uniform_real_distribution<double>(0.0, 1.0)(random_);
  });
  if (backoff.steps == 0) {
    // Upstream waits once more and then stops without another attempt.
    DEVMGR_LOG(options_.logger, err, "Giving up deleting ResourceSlices", "target", Target(name),
               "err", status.message());
    pending_.erase(it);
    return;
  }
  DEVMGR_LOG(options_.logger, warn, "Deleting ResourceSlices failed, retrying", "target",
             Target(name), "err", status.message(), "retryIn", wait);
  it->second.due = clock_.Now() + wait;
}

}  // namespace devmgr::dra
