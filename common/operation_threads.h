// OperationThreads: runs blocking operations each on a thread started for it, up to a limit; an
// operation posted with every thread busy waits for the first one free. A thread ends as soon
// as nothing waits, so an idle owner holds none.
//
// Where upstream gives each operation a goroutine of its own (the plugin watcher's per-socket
// operations, a DRA driver helper's claim reads), one that hangs never delays another's; the
// limit keeps that for the load a node sees, while a flood of hung operations cannot make
// thousands of threads.
//
// Thread-safe. Join waits for every operation posted before it, then lets no more run.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace devmgr {

class OperationThreads {
 public:
  explicit OperationThreads(size_t max_threads);
  ~OperationThreads();

  OperationThreads(const OperationThreads&) = delete;
  OperationThreads& operator=(const OperationThreads&) = delete;

  // Post runs `operation` on a thread of its own, or once a thread is free; after Join, never.
  // When no thread can be started (the process's limit), it waits for one that runs, or for
  // the next Post that can start one.
  void Post(std::function<void()> operation) ABSL_LOCKS_EXCLUDED(mu_);

  // Join waits for what is posted to run and for every thread to end; an operation still waiting
  // because no thread could be started runs on the caller's. Blocks.
  void Join() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Worker {
    std::thread thread;
    bool done = false;
  };

  // Run: a thread's loop, taking operations until none waits.
  void Run(Worker& self) ABSL_LOCKS_EXCLUDED(mu_);

  const size_t max_threads_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> waiting_ ABSL_GUARDED_BY(mu_);
  // Stable addresses: each thread marks its own entry done as its last step under mu_, and the
  // next Post or Join joins and drops it.
  std::list<Worker> workers_ ABSL_GUARDED_BY(mu_);
  size_t running_ ABSL_GUARDED_BY(mu_) = 0;
  bool joined_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace devmgr
