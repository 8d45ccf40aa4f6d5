// EventLoop: one thread running a Boost.Asio io_context, the home of inotify watches, timers and
// the slow follow-ups of gRPC reactions (which must never block a library thread).
//
// Handlers run one at a time on the loop thread, in the order they were posted. A handler must
// not wait for another handler, and must not call Stop or destroy the loop.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <thread>

#include "absl/time/time.h"

namespace devmgr {

class EventLoop {
 public:
  // Starts the thread.
  EventLoop();
  // Stops and joins; handlers not yet run are dropped.
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // For I/O objects (descriptors, timers) that belong to this loop.
  boost::asio::io_context& context() { return context_; }

  // Post runs `fn` on the loop thread soon. Thread-safe; never blocks.
  void Post(std::function<void()> fn);

  // PostAfter runs `fn` on the loop thread after `delay` (a real-time wait). Thread-safe.
  void PostAfter(absl::Duration delay, std::function<void()> fn);

  // IsLoopThread: the caller is the loop thread.
  bool IsLoopThread() const { return std::this_thread::get_id() == thread_.get_id(); }

  // Stop ends the loop and joins its thread; idempotent. Not from the loop thread.
  void Stop();

 private:
  boost::asio::io_context context_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  // Last, so that it starts after and joins before everything it uses.
  std::thread thread_;
};

}  // namespace devmgr
