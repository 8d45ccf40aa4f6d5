// TokenBucket: golang.org/x/time/rate's limiter as upstream's rate limits use it. It holds up to
// `burst` tokens, refilled at `qps` a second, and starts full. Allow takes a token only when
// one is there (the PodResources interceptor's Allow); Reserve always takes one and says how
// long to wait until it would have been there (client-go's bucket rate limiter's Reserve), and
// CancelReservation gives a token taken ahead back when its wait is given up (a request
// cancelled while it waits, as x/time/rate's Wait cancels its reservation).
// Time that goes back refills nothing, and the bucket refills from there (the wall clock can
// step back; Go's limiter reads a monotonic clock). A plain value: not thread-safe.
#pragma once

#include "absl/time/time.h"

namespace devmgr {

class TokenBucket {
 public:
  TokenBucket(double qps, int burst, absl::Time now);

  // Allow takes one token if one is available at `now`.
  bool Allow(absl::Time now);
  // Reserve takes one token, available or not: zero when it was there at `now`, else how long
  // until the tokens taken ahead of time are refilled.
  absl::Duration Reserve(absl::Time now);
  // CancelReservation: the reservation due at `act_at` (its `now` plus its wait) will not act.
  // Its token comes back, less those reserved after it, which keep their turns; nothing comes
  // back once `act_at` has passed.
  void CancelReservation(absl::Time act_at, absl::Time now);
  // Full: no token has been taken that is not yet refilled at `now`.
  bool Full(absl::Time now) const;

 private:
  // Refill brings the count up to `now`.
  void Refill(absl::Time now);
  double TokensAt(absl::Time now) const;
  // DurationOfTokens: how long `tokens` take to refill, in Go's whole nanoseconds.
  absl::Duration DurationOfTokens(double tokens) const;

  double qps_;
  double burst_;
  // Below zero while reservations wait for tokens they took.
  double tokens_;
  absl::Time last_;
  // When the latest reservation acts.
  absl::Time last_act_;
};

}  // namespace devmgr
