// StopOnce: a shutdown run once, however many callers ask for it and from where. The first
// caller runs it. A caller on another thread waits until it has finished: a host's signal thread
// and its main thread may both stop an object, and main then destroys it. A caller on the thread
// that runs it (a callback the shutdown waits for, which stops the object again) returns at
// once, as it would have found the shutdown under way.
#pragma once

#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace devmgr {

class StopOnce {
 public:
  // Run runs `stop` unless a Run has begun already; see above. Thread-safe.
  void Run(absl::FunctionRef<void()> stop) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::thread::id runner_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr
