#include "common/operation_threads.h"

#include <algorithm>
#include <system_error>
#include <utility>

namespace devmgr {
namespace {

// Joins the threads `finished` took out of the list; their last step under the lock is done.
void JoinAll(std::list<std::thread>& finished) {
  for (std::thread& thread : finished) thread.join();
}

}  // namespace

OperationThreads::OperationThreads(size_t max_threads)
    : max_threads_(std::max<size_t>(1, max_threads)) {}

OperationThreads::~OperationThreads() { Join(); }

void OperationThreads::Post(std::function<void()> operation) {
  std::list<std::thread> finished;
  {
    absl::MutexLock lock(&mu_);
    if (joined_) return;
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (!it->done) {
        ++it;
        continue;
      }
      finished.push_back(std::move(it->thread));
      it = workers_.erase(it);
    }
    waiting_.push_back(std::move(operation));
    if (running_ < max_threads_) {
      Worker& worker = workers_.emplace_back();
      try {
        worker.thread = std::thread([this, &worker] { Run(worker); });
        ++running_;
      } catch (const std::system_error&) {
        // No thread to be had (the process's limit): the operation waits for a running one, or
        // for the next Post that gets one.
        workers_.pop_back();
      }
    }
  }
  JoinAll(finished);
}

void OperationThreads::Run(Worker& self) {
  for (;;) {
    std::function<void()> operation;
    {
      absl::MutexLock lock(&mu_);
      if (waiting_.empty()) {
        --running_;
        self.done = true;
        return;
      }
      operation = std::move(waiting_.front());
      waiting_.pop_front();
    }
    operation();
  }
}

void OperationThreads::Join() {
  std::list<std::thread> all;
  std::deque<std::function<void()>> stranded;
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](size_t* running) { return *running == 0; }, &running_));
    joined_ = true;
    for (Worker& worker : workers_) all.push_back(std::move(worker.thread));
    workers_.clear();
    // Left only when no thread could be started for them: run here, so none is lost.
    stranded.swap(waiting_);
  }
  JoinAll(all);
  for (std::function<void()>& operation : stranded) operation();
}

}  // namespace devmgr
