// Cancellation: lets another thread end at once what a request is waiting for (a watch that has
// nothing to say for minutes, a hung server, an exec plugin that does not finish). Set once;
// whatever starts waiting after Cancel ends at once.
//
// A wait registers how to wake it with a Cancellation::Waker for as long as it waits (curl's
// multi handle, a mutex's condition); Cancel calls every registered wake under its lock, so a
// Waker's wake is neither running nor called again once the Waker is gone. A wake must not
// call back into its Cancellation.
//
// Thread-safety: every method may be called from any thread at once, and any number of waits
// may share one Cancellation.
#pragma once

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace devmgr::kubeclient {

class Cancellation {
 public:
  class Waker;

  Cancellation() = default;
  Cancellation(const Cancellation&) = delete;
  Cancellation& operator=(const Cancellation&) = delete;

  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);
  bool cancelled() const ABSL_LOCKS_EXCLUDED(mu_);
  // WaitForCancel waits up to `timeout` for Cancel: true once cancelled (a retry's pause).
  bool WaitForCancel(absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);
  // How many waits are in progress now, those of WaitForCancel and those with a Waker (a
  // test's sign that a wait has begun).
  int waiting() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // The waits in progress.
  mutable std::vector<Waker*> wakers_ ABSL_GUARDED_BY(mu_);
};

// Waker: while it lives, Cancel of `cancel` calls `wake` (at most once). `cancel` may be null:
// nothing then cancels the wait.
class Cancellation::Waker {
 public:
  Waker(const Cancellation* cancel, absl::AnyInvocable<void()> wake);
  ~Waker();
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;

  // Whether `cancel` had already been cancelled when the Waker was made: the wait should not
  // begin, and `wake` is never called.
  bool too_late() const { return too_late_; }

 private:
  friend class Cancellation;

  const Cancellation* const cancel_;
  absl::AnyInvocable<void()> wake_;
  bool too_late_ = false;
};

}  // namespace devmgr::kubeclient
