// Backoff: the retry schedule of Kubernetes' wait.Backoff (k8s.io/apimachinery/pkg/util/wait),
// which the kubelet and client-go use for their retries: each Step returns the wait before the
// next attempt and grows the next one by `factor`; `jitter` adds up to that fraction of the wait
// at random; once the wait would pass `cap` it stays at `cap` and the schedule ends (no steps
// left), as upstream's does. A plain value; the owner's lock guards it.
#pragma once

#include <algorithm>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"

namespace devmgr {

struct Backoff {
  absl::Duration duration;
  double factor = 1.0;
  double jitter = 0.0;
  // Attempts left: Step may be called steps - 1 times (the first attempt needs no wait).
  int steps = 1;
  // Zero: no cap.
  absl::Duration cap = absl::ZeroDuration();

  // Step returns the wait before the next attempt and moves on. `random` returns a number in
  // [0, 1) and is called only when jitter is set.
  absl::Duration Step(absl::FunctionRef<double()> random) {
    absl::Duration wait = duration;
    if (steps >= 1) {
      --steps;
      if (factor != 0.0) {
        duration = duration * factor;
        if (cap > absl::ZeroDuration() && duration > cap) {
          duration = cap;
          steps = 0;
        }
      }
    }
    if (jitter > 0.0) wait += wait * (jitter * random());
    return wait;
  }
};

}  // namespace devmgr
