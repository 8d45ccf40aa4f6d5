// RunAtOnce calls `fn` on `threads` threads released together, and returns once every call has
// returned: how tests put several callers into one method at the same moment.
#pragma once

#include <functional>
#include <thread>
#include <vector>

#include "absl/synchronization/barrier.h"

namespace devmgr::testing {

inline void RunAtOnce(int threads, const std::function<void()>& fn) {
  // The last thread through the barrier deletes it (absl::Barrier's own rule).
  auto* start = new absl::Barrier(threads);
  std::vector<std::thread> callers;
  callers.reserve(threads);
  for (int i = 0; i < threads; ++i) {
    callers.emplace_back([start, &fn] {
      if (start->Block()) delete start;
      fn();
    });
  }
  for (std::thread& caller : callers) caller.join();
}

}  // namespace devmgr::testing
