// TokenBucket: Allow takes a token only when one is there, Reserve takes one ahead of time and
// says how long to wait; neither refills past the burst nor for time the clock went back.
#include "common/token_bucket.h"

#include <gtest/gtest.h>

namespace devmgr {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

TEST(TokenBucketTest, StartsFullAndRefillsAtQps) {
  absl::Time now = kStart;
  TokenBucket bucket(100, 10, now);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(bucket.Allow(now)) << i;
  EXPECT_FALSE(bucket.Allow(now));
  now += absl::Milliseconds(10);  // one token at 100/s
  EXPECT_TRUE(bucket.Allow(now));
  EXPECT_FALSE(bucket.Allow(now));
  now += absl::Seconds(60);  // never more than the burst
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(bucket.Allow(now)) << i;
  EXPECT_FALSE(bucket.Allow(now));
}

// The wall clock can step back (an NTP step, an operator): the bucket refills from the earlier
// time on, instead of waiting for the clock to come back to where it was.
TEST(TokenBucketTest, RefillsAgainSoonAfterTheClockGoesBack) {
  absl::Time now = kStart;
  TokenBucket bucket(1, 2, now);
  EXPECT_TRUE(bucket.Allow(now));
  now -= absl::Hours(1);
  EXPECT_TRUE(bucket.Allow(now)) << "a token left";
  EXPECT_FALSE(bucket.Allow(now));
  now += absl::Seconds(1);
  EXPECT_TRUE(bucket.Allow(now)) << "refilled at 1/s";
  EXPECT_FALSE(bucket.Allow(now));
}

// Reserve, as client-go's bucket rate limiter uses it: the burst goes at once, then each
// reservation waits one more interval, and the tokens taken ahead are refilled before any
// reservation is free again.
TEST(TokenBucketTest, ReservationsPastTheBurstWaitInTurn) {
  absl::Time now = kStart;
  TokenBucket bucket(10, 3, now);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bucket.Reserve(now), absl::ZeroDuration()) << i;
  EXPECT_EQ(bucket.Reserve(now), absl::Milliseconds(100));
  EXPECT_EQ(bucket.Reserve(now), absl::Milliseconds(200));
  EXPECT_FALSE(bucket.Allow(now));
  now += absl::Milliseconds(200);  // the two taken ahead are back, no more
  EXPECT_EQ(bucket.Reserve(now), absl::Milliseconds(100));
  EXPECT_FALSE(bucket.Full(now));
  now += absl::Seconds(1);
  EXPECT_TRUE(bucket.Full(now));
  EXPECT_EQ(bucket.Reserve(now), absl::ZeroDuration());
}

}  // namespace
}  // namespace devmgr
