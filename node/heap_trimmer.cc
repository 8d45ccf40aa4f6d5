#include "node/heap_trimmer.h"

#include <malloc.h>

#include <algorithm>

namespace devmgr::node {

HeapTrimmer::HeapTrimmer(Options options) : options_(options), thread_([this] { Run(); }) {}

HeapTrimmer::~HeapTrimmer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void HeapTrimmer::Touch() {
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  if (!pending_) first_touch_ = now;
  pending_ = true;
  last_touch_ = now;
}

absl::Time HeapTrimmer::DueLocked() const {
  return std::min(last_touch_ + options_.quiet, first_touch_ + options_.max_delay);
}

void HeapTrimmer::Run() {
  mu_.Lock();
  for (;;) {
    mu_.Await(absl::Condition(
        +[](HeapTrimmer* self)
             ABSL_NO_THREAD_SAFETY_ANALYSIS { return self->stopping_ || self->pending_; },
        this));
    // Each Touch moves the due time; wait until the latest one passes.
    while (!stopping_ && absl::Now() < DueLocked()) {
      mu_.AwaitWithDeadline(absl::Condition(&stopping_), DueLocked());
    }
    if (stopping_) break;
    pending_ = false;
    mu_.Unlock();
    const absl::Time start = absl::Now();
    malloc_trim(0);
    trim_nanos_.fetch_add(absl::ToInt64Nanoseconds(absl::Now() - start), std::memory_order_relaxed);
    trims_.fetch_add(1, std::memory_order_relaxed);
    mu_.Lock();
  }
  mu_.Unlock();
}

}  // namespace devmgr::node
