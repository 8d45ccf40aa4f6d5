#include "kubeclient/cancellation.h"

#include <algorithm>
#include <utility>

namespace devmgr::kubeclient {

void Cancellation::Cancel() {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return;
  cancelled_ = true;
  for (Waker* waker : wakers_) waker->wake_();
}

bool Cancellation::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

bool Cancellation::WaitForCancel(absl::Duration timeout) const {
  // Registered only to be counted by waiting(): Cancel sets cancelled_ under mu_, which wakes
  // the wait below by itself.
  const Waker counted(this, [] {});
  if (counted.too_late()) return true;
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&cancelled_), timeout);
}

int Cancellation::waiting() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(wakers_.size());
}

Cancellation::Waker::Waker(const Cancellation* cancel, absl::AnyInvocable<void()> wake)
    : cancel_(cancel), wake_(std::move(wake)) {
  if (cancel_ == nullptr) return;
  absl::MutexLock lock(&cancel_->mu_);
  too_late_ = cancel_->cancelled_;
  if (!too_late_) cancel_->wakers_.push_back(this);
}

Cancellation::Waker::~Waker() {
  if (cancel_ == nullptr || too_late_) return;
  absl::MutexLock lock(&cancel_->mu_);
  std::vector<Waker*>& wakers = cancel_->wakers_;
  wakers.erase(std::find(wakers.begin(), wakers.end(), this));
}

}  // namespace devmgr::kubeclient
