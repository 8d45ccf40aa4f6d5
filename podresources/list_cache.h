// ListCache: the last v1 List answer, serialized, with the revisions of the pods and of the
// device allocations it was built from. While both providers report the same revisions, List
// sends the same bytes again instead of reading every container's devices and serializing the
// whole answer anew, so a monitoring client polling an unchanged node costs little more than
// the garbage collection List always runs. Beyond upstream, whose List rebuilds every time.
//
// Answers are reused only when every provider that contributes to them can tell its revision:
// the pods and devices providers report one, and there is no CPU, memory or dynamic resources
// provider (their interfaces have no revision). Otherwise every List is built, as upstream.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "podresources/providers.h"

namespace devmgr::podresources {

class ListCache {
 public:
  // Key: what an answer was built from.
  struct Key {
    uint64_t pods = 0;
    uint64_t devices = 0;
    friend bool operator==(const Key&, const Key&) = default;
  };

  // KeyOf reads the providers' revisions, or nullopt when answers cannot be reused. Read it
  // before reading the state the answer is built from: an answer is then at least as new as
  // its key, and any later change gives a different key.
  static std::optional<Key> KeyOf(const Providers& providers);

  // Find is the answer kept for `key`, if the one kept was built at `key`. The copy shares
  // the bytes (a ByteBuffer copy references the same slices).
  std::optional<grpc::ByteBuffer> Find(const Key& key) const;
  // Keep replaces the answer kept with `answer`, built after `key` was read.
  void Keep(const Key& key, const grpc::ByteBuffer& answer);

 private:
  mutable absl::Mutex mu_;
  std::optional<Key> key_ ABSL_GUARDED_BY(mu_);
  grpc::ByteBuffer answer_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::podresources
