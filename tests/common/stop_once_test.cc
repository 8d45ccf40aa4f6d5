// StopOnce: the shutdown runs once; a caller on another thread waits for it to finish; one on
// the thread running it returns at once.
#include "common/stop_once.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/synchronization/notification.h"
#include "tests/testlib/wait_for.h"

namespace devmgr {
namespace {

using testing::WaitFor;

TEST(StopOnceTest, ASecondCallerWaitsForTheFirstToFinish) {
  StopOnce once;
  std::atomic<int> runs{0};
  absl::Notification running;
  absl::Notification release;
  std::thread first([&] {
    once.Run([&] {
      ++runs;
      running.Notify();
      release.WaitForNotification();
    });
  });
  running.WaitForNotification();
  std::atomic<bool> returned{false};
  std::thread second([&] {
    once.Run([&] { ++runs; });
    returned = true;
  });
  EXPECT_FALSE(WaitFor([&] { return returned.load(); }, std::chrono::milliseconds(200)))
      << "returned while the first was still stopping";
  release.Notify();
  EXPECT_TRUE(WaitFor([&] { return returned.load(); }));
  first.join();
  second.join();
  EXPECT_EQ(runs.load(), 1);
  once.Run([&] { ++runs; });
  EXPECT_EQ(runs.load(), 1) << "and every later call returns at once";
}

// A callback that the shutdown waits for may stop the object again: it returns at once, where
// waiting for the shutdown would wait for itself.
TEST(StopOnceTest, ACallFromInsideTheShutdownReturnsAtOnce) {
  StopOnce once;
  int runs = 0;
  bool inner_returned = false;
  once.Run([&] {
    ++runs;
    once.Run([&] { ++runs; });
    inner_returned = true;
  });
  EXPECT_TRUE(inner_returned);
  EXPECT_EQ(runs, 1);
}

}  // namespace
}  // namespace devmgr
