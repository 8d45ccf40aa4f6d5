// HeapTrimmer: hands back to the kernel the memory that malloc keeps after a burst of work.
//
// glibc keeps what a program frees inside its arenas for reuse, and gives back only what lies
// at the top of an arena. An admission frees its transient buffers (the checkpoint rendered,
// gRPC messages) between the pods' long-lived allocations, so after 10,000 admissions about
// 10 MiB of the daemon's resident memory was free heap (docs/PERFORMANCE.md). The kubelet,
// written in Go, has the runtime's background scavenger for this; a C++ daemon must ask:
// malloc_trim(0) releases the free pages inside every arena.
//
// A thread trims once work has paused for `quiet`, or `max_delay` after the first work not yet
// trimmed when it never pauses: an idle daemon pays nothing, a busy one a trim per `max_delay`.
// A trim walks the free lists and gives back each free run of whole pages; its cost grows with
// how scattered the free memory is (measured in docs/PERFORMANCE.md). Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace devmgr::node {

class HeapTrimmer {
 public:
  struct Options {
    absl::Duration quiet = absl::Seconds(1);
    absl::Duration max_delay = absl::Seconds(10);
  };

  explicit HeapTrimmer(Options options);
  // Stops the thread; a trim that is due but not yet run is dropped.
  ~HeapTrimmer();
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;

  // Touch: work happened that may have freed memory. Takes a lock briefly; never waits for a
  // trim.
  void Touch();

  // trims: how many trims have run; trim_time: how long they took in all.
  uint64_t trims() const { return trims_.load(std::memory_order_relaxed); }
  absl::Duration trim_time() const {
    return absl::Nanoseconds(trim_nanos_.load(std::memory_order_relaxed));
  }

 private:
  void Run();
  // When the pending trim is due; needs pending_.
  absl::Time DueLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Work happened since the last trim began.
  bool pending_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time first_touch_ ABSL_GUARDED_BY(mu_);
  absl::Time last_touch_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> trims_{0};
  std::atomic<int64_t> trim_nanos_{0};
  // Last: starts once the fields above exist.
  std::thread thread_;
};

}  // namespace devmgr::node
