// RunWithStack: a call made on a thread of its own, with a stack of a given size, for a
// recursion whose depth the input decides (the DRA allocator's search takes a frame for every
// device it picks): past what the caller's thread surely holds, the depth gets the stack it needs
// instead of overflowing the caller's.
#pragma once

#include <cstddef>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace devmgr {

// RunWithStack runs `fn` on a new thread whose stack holds `stack_bytes` (rounded up to whole
// pages, at least the system's minimum), and returns once it has returned. ResourceExhausted,
// without calling `fn`, when no such thread can be made (a stack larger than the address space
// allows). Thread-safe.
absl::Status RunWithStack(size_t stack_bytes, absl::FunctionRef<void()> fn);

}  // namespace devmgr
