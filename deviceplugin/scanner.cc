#include "deviceplugin/scanner.h"

namespace devmgr::deviceplugin {

void StopToken::RequestStop() {
  absl::MutexLock lock(&mu_);
  stop_ = true;
}

bool StopToken::stop_requested() const {
  absl::MutexLock lock(&mu_);
  return stop_;
}

bool StopToken::WaitForStop(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(this, &StopToken::StopOrWoken), timeout);
  woken_ = false;
  return stop_;
}

bool StopToken::StopOrWoken() const { return stop_ || woken_; }

void StopToken::Wake() const {
  absl::MutexLock lock(&mu_);
  woken_ = true;
}

}  // namespace devmgr::deviceplugin
