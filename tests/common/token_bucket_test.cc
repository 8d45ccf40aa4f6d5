// TokenBucket: Allow takes a token only when one is there, Reserve takes one ahead of time and
// says how long to wait; neither refills past the burst nor for time the clock went back.
#include "common/token_bucket.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

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

// A wait is in whole nanoseconds, truncated, as x/time/rate's arithmetic gives it in Go: a
// third of a second is 333,333,333 ns, not a quarter nanosecond more.
TEST(TokenBucketTest, WaitsAreWholeNanosecondsAsGosAre) {
  TokenBucket thirds(3, 1, kStart);
  EXPECT_EQ(thirds.Reserve(kStart), absl::ZeroDuration());
  EXPECT_EQ(thirds.Reserve(kStart), absl::Nanoseconds(333333333));
  EXPECT_EQ(thirds.Reserve(kStart), absl::Nanoseconds(666666666));
  TokenBucket odd(1.05, 1, kStart);
  EXPECT_EQ(odd.Reserve(kStart), absl::ZeroDuration());
  EXPECT_EQ(odd.Reserve(kStart), absl::Nanoseconds(952380952));
  // Past Go's longest Duration, that one.
  TokenBucket stalled(1e-12, 1, kStart);
  EXPECT_EQ(stalled.Reserve(kStart), absl::ZeroDuration());
  EXPECT_EQ(stalled.Reserve(kStart), absl::Nanoseconds(std::numeric_limits<int64_t>::max()));
}

// A wait given up gives its token back, as x/time/rate's Wait cancels its reservation: the
// next reservation waits as if the cancelled one had not been made. Tokens reserved after it
// keep their turns, and one whose time has come is spent.
TEST(TokenBucketTest, ACancelledReservationGivesItsTokenBack) {
  absl::Time now = kStart;
  TokenBucket bucket(10, 1, now);
  EXPECT_EQ(bucket.Reserve(now), absl::ZeroDuration());
  const absl::Duration wait = bucket.Reserve(now);
  EXPECT_EQ(wait, absl::Milliseconds(100));
  bucket.CancelReservation(now + wait, now + absl::Milliseconds(40));
  now += absl::Milliseconds(40);
  EXPECT_EQ(bucket.Reserve(now), absl::Milliseconds(60)) << "as if never taken";

  // Cancelling the first of two waiting gives back nothing of the second's turn: the first's
  // token went to the second, which still acts when it was due.
  TokenBucket queued(10, 1, now);
  EXPECT_EQ(queued.Reserve(now), absl::ZeroDuration());
  const absl::Duration first = queued.Reserve(now);
  const absl::Duration second = queued.Reserve(now);
  EXPECT_EQ(second, absl::Milliseconds(200));
  queued.CancelReservation(now + first, now);
  EXPECT_EQ(queued.Reserve(now), absl::Milliseconds(300));

  // The last of them cancelled: the one after it takes its place.
  TokenBucket last(10, 1, now);
  EXPECT_EQ(last.Reserve(now), absl::ZeroDuration());
  EXPECT_EQ(last.Reserve(now), absl::Milliseconds(100));
  const absl::Duration latest = last.Reserve(now);
  last.CancelReservation(now + latest, now);
  EXPECT_EQ(last.Reserve(now), latest);

  // A reservation whose time has come was spent.
  TokenBucket spent(10, 1, now);
  EXPECT_EQ(spent.Reserve(now), absl::ZeroDuration());
  const absl::Duration due = spent.Reserve(now);
  spent.CancelReservation(now + due, now + absl::Milliseconds(150));
  EXPECT_EQ(spent.Reserve(now + absl::Milliseconds(150)), absl::Milliseconds(50));

  // The clock went back between two reservations: the first cancelled gives back its one token,
  // no more.
  TokenBucket stepped(10, 1, now);
  EXPECT_EQ(stepped.Reserve(now), absl::ZeroDuration());
  const absl::Duration before_step = stepped.Reserve(now);
  const absl::Time back = now - absl::Hours(1);
  EXPECT_EQ(stepped.Reserve(back), absl::Milliseconds(200));
  stepped.CancelReservation(now + before_step, back);
  EXPECT_EQ(stepped.Reserve(back), absl::Milliseconds(200));
}

}  // namespace
}  // namespace devmgr
