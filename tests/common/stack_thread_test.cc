// RunWithStack: a recursion deeper than a thread's default stack (8 MiB) holds runs on the
// stack it is given.
#include "common/stack_thread.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <limits>

namespace devmgr {
namespace {

// Depth: recurses `levels` deep, each level holding a KiB on the stack, and returns the sum of
// a byte of each (so that no level can be folded away).
size_t Depth(size_t levels) {
  volatile char frame[1024];
  std::memset(const_cast<char*>(frame), static_cast<int>(levels & 0x7f), sizeof frame);
  if (levels == 0) return 0;
  return Depth(levels - 1) + static_cast<size_t>(frame[levels % sizeof frame]);
}

TEST(StackThreadTest, ARecursionDeeperThanADefaultStackRunsOnTheStackGiven) {
  constexpr size_t kLevels = 20'000;  // 20 MiB and more of frames
  size_t sum = 0;
  ASSERT_TRUE(RunWithStack(size_t{128} << 20, [&] { sum = Depth(kLevels); }).ok());
  size_t want = 0;
  for (size_t level = 1; level <= kLevels; ++level) want += level & 0x7f;
  EXPECT_EQ(sum, want);
}

TEST(StackThreadTest, AStackNoThreadCanHaveIsAnErrorAndNothingRuns) {
  bool ran = false;
  const absl::Status status =
      RunWithStack(std::numeric_limits<size_t>::max() / 2, [&] { ran = true; });
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_FALSE(ran);
  // Nor one whose size wraps around when rounded up to whole pages.
  EXPECT_EQ(RunWithStack(std::numeric_limits<size_t>::max(), [&] { ran = true; }).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace devmgr
