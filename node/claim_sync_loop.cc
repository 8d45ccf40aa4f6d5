#include "node/claim_sync_loop.h"

#include <utility>

namespace devmgr::node {

ClaimSyncLoop::ClaimSyncLoop(absl::Duration period, std::function<void()> pass)
    : period_(period), pass_(std::move(pass)), thread_([this] { Run(); }) {}

ClaimSyncLoop::~ClaimSyncLoop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void ClaimSyncLoop::Kick() {
  absl::MutexLock lock(&mu_);
  kicked_ = true;
}

void ClaimSyncLoop::Run() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto due = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return kicked_ || stopping_; };
      mu_.AwaitWithTimeout(absl::Condition(&due), period_);
      if (stopping_) return;
      kicked_ = false;
    }
    pass_();
  }
}

}  // namespace devmgr::node
