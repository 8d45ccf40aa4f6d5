#include "common/event_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "absl/synchronization/notification.h"

namespace devmgr {
namespace {

TEST(EventLoopTest, RunsHandlersInOrderOnItsThread) {
  EventLoop loop;
  std::vector<int> seen;
  absl::Notification done;
  for (int i = 0; i < 100; ++i) {
    loop.Post([&, i] {
      EXPECT_TRUE(loop.IsLoopThread());
      seen.push_back(i);
      if (i == 99) done.Notify();
    });
  }
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], i);
  EXPECT_FALSE(loop.IsLoopThread());
}

TEST(EventLoopTest, PostAfterWaitsAndStopDropsPendingWork) {
  std::atomic<int> ran{0};
  absl::Notification done;
  {
    EventLoop loop;
    loop.PostAfter(absl::Milliseconds(5), [&] {
      ++ran;
      done.Notify();
    });
    loop.PostAfter(absl::Hours(1), [&] { ++ran; });
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
    loop.Stop();
    loop.Stop();  // idempotent
  }
  EXPECT_EQ(ran.load(), 1);
}

}  // namespace
}  // namespace devmgr
