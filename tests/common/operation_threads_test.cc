// OperationThreads: a thread per operation up to the limit, the rest waiting their turn, no
// thread left once nothing waits, and nothing run after Join.
#include "common/operation_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "absl/synchronization/notification.h"
#include "tests/testlib/wait_for.h"

namespace devmgr {
namespace {

using ::devmgr::testing::WaitFor;

TEST(OperationThreadsTest, RunsUpToItsLimitAtOnceAndTheRestInTurn) {
  OperationThreads threads(3);
  absl::Notification release;
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  std::atomic<int> done{0};
  for (int i = 0; i < 10; ++i) {
    threads.Post([&] {
      const int now = running.fetch_add(1) + 1;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      release.WaitForNotification();
      running.fetch_sub(1);
      done.fetch_add(1);
    });
  }
  ASSERT_TRUE(WaitFor([&] { return running.load() == 3; }, std::chrono::seconds(10)));
  EXPECT_EQ(done.load(), 0);
  release.Notify();
  threads.Join();
  EXPECT_EQ(done.load(), 10);
  EXPECT_EQ(most.load(), 3);
}

TEST(OperationThreadsTest, NothingRunsAfterJoin) {
  OperationThreads threads(2);
  std::atomic<int> ran{0};
  threads.Post([&] { ran.fetch_add(1); });
  threads.Join();
  threads.Post([&] { ran.fetch_add(1); });
  threads.Join();
  EXPECT_EQ(ran.load(), 1);
}

// A burst leaves no thread behind: each one ends once nothing waits, and the next operation
// starts a thread again.
TEST(OperationThreadsTest, ThreadsEndWhenNothingWaitsAndStartAgain) {
  OperationThreads threads(4);
  std::atomic<int> ran{0};
  for (int round = 0; round < 50; ++round) {
    threads.Post([&] { ran.fetch_add(1); });
    ASSERT_TRUE(WaitFor([&] { return ran.load() == round + 1; }, std::chrono::seconds(10)));
  }
  threads.Join();
  EXPECT_EQ(ran.load(), 50);
}

}  // namespace
}  // namespace devmgr
