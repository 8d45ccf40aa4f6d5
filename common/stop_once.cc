#include "common/stop_once.h"

namespace devmgr {

void StopOnce::Run(absl::FunctionRef<void()> stop) {
  {
    absl::MutexLock lock(&mu_);
    if (started_) {
      if (runner_ != std::this_thread::get_id()) mu_.Await(absl::Condition(&done_));
      return;
    }
    started_ = true;
    runner_ = std::this_thread::get_id();
  }
  stop();
  absl::MutexLock lock(&mu_);
  done_ = true;
}

}  // namespace devmgr
