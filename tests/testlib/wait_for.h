// WaitFor polls `condition` until it holds or `timeout` passes: the only way tests here wait
// for something another thread or process does. Never a bare sleep.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace devmgr::testing {

inline bool WaitFor(const std::function<bool()>& condition,
                    std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace devmgr::testing
