// HeapTrimmer: one trim once work pauses, one per max_delay while it never does, and a
// destructor that does not wait for a trim still due.
#include "node/heap_trimmer.h"

#include <gtest/gtest.h>

#include <chrono>

#include "tests/testlib/wait_for.h"

namespace devmgr::node {
namespace {

using ::devmgr::testing::WaitFor;

TEST(HeapTrimmerTest, TrimsOnceWorkPauses) {
  HeapTrimmer trimmer({.quiet = absl::Milliseconds(20), .max_delay = absl::Hours(1)});
  EXPECT_EQ(trimmer.trims(), 0u);
  trimmer.Touch();
  trimmer.Touch();
  // Both touches fall in one pause: one trim.
  ASSERT_TRUE(WaitFor([&] { return trimmer.trims() >= 1; }));
  EXPECT_EQ(trimmer.trims(), 1u);
  trimmer.Touch();
  ASSERT_TRUE(WaitFor([&] { return trimmer.trims() >= 2; }));
}

TEST(HeapTrimmerTest, TrimsAfterMaxDelayWhileWorkNeverPauses) {
  // The pause never comes (an hour); only max_delay can bring the trim, while touches go on.
  HeapTrimmer trimmer({.quiet = absl::Hours(1), .max_delay = absl::Milliseconds(50)});
  EXPECT_TRUE(WaitFor([&] {
    trimmer.Touch();
    return trimmer.trims() >= 1;
  }));
}

TEST(HeapTrimmerTest, DestructorDoesNotWaitForADueTrim) {
  const auto start = std::chrono::steady_clock::now();
  {
    HeapTrimmer trimmer({.quiet = absl::Hours(1), .max_delay = absl::Hours(1)});
    trimmer.Touch();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace devmgr::node
