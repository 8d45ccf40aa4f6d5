// Invariant checks for the fuzz targets: a broken invariant prints what broke and aborts, which
// libFuzzer reports as a crash and saves the input, so a logic error is found like a crash.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace devmgr::fuzz {

inline void Invariant(bool holds, const char* what) {
  if (!holds) {
    std::fprintf(stderr, "invariant broken: %s\n", what);
    std::abort();
  }
}

}  // namespace devmgr::fuzz
