#include "common/event_loop.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>

namespace devmgr {

EventLoop::EventLoop()
    : work_(boost::asio::make_work_guard(context_)), thread_([this] { context_.run(); }) {}

EventLoop::~EventLoop() { Stop(); }

void EventLoop::Post(std::function<void()> fn) { boost::asio::post(context_, std::move(fn)); }

void EventLoop::PostAfter(absl::Duration delay, std::function<void()> fn) {
  // The timer must outlive the wait; the handler owns it.
  auto timer =
      std::make_shared<boost::asio::steady_timer>(context_, absl::ToChronoNanoseconds(delay));
  timer->async_wait([timer, fn = std::move(fn)](const boost::system::error_code& ec) {
    if (!ec) fn();
  });
}

void EventLoop::Stop() {
  work_.reset();
  context_.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace devmgr
