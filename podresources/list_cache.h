// ListCache: the v1 List answer, kept between calls at two levels, so that a monitoring client
// polling a node pays for what changed, not for every pod (beyond upstream, whose List
// rebuilds the whole answer each time):
// - the whole answer, with the revisions of the active pods, of the device allocations and of
//   the dynamic resources it was built from: while the providers report the same revisions,
//   List sends it again;
// - each pod's part of it (its PodResources, serialized as an element of the answer), with the
//   pod as the pods provider described it, the revision of the pod's allocations and that of
//   the dynamic resources: when the answer must be built again, only the pods that changed are
//   read and serialized (every pod after a change of dynamic resources, which are not told
//   per pod).
//
// Nothing is reused unless every provider that contributes can tell its revisions: the pods,
// devices and dynamic resources (if any) providers report them, and there is no CPU or memory
// provider (their interfaces have none). Otherwise every pod is read for every List, as
// upstream.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "podresources/providers.h"

namespace devmgr::podresources {

class ListCache {
 public:
  // Answer is the serialized ListPodResourcesResponse for the providers' state now (read
  // after the call began). Thread-safe; answers that must be built are built one at a time.
  grpc::ByteBuffer Answer(const Providers& providers) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // What a whole answer was built from.
  struct Key {
    uint64_t pods = 0;
    uint64_t devices = 0;
    uint64_t dynamic = 0;  // 0 without a dynamic resources provider
    friend bool operator==(const Key&, const Key&) = default;
  };
  // One pod's element of the answer (field tag, length and PodResources), and what it was
  // built from.
  struct PodPart {
    Pod pod;
    uint64_t revision = 0;
    uint64_t dynamic = 0;  // Key::dynamic when it was built
    std::shared_ptr<const std::string> bytes;
    uint64_t build = 0;  // the last answer built that listed it
  };

  mutable absl::Mutex mu_;
  std::optional<Key> key_ ABSL_GUARDED_BY(mu_);
  grpc::ByteBuffer answer_ ABSL_GUARDED_BY(mu_);
  // By pod UID: the active pods of the last answer built.
  std::unordered_map<std::string, PodPart> parts_ ABSL_GUARDED_BY(mu_);
  uint64_t builds_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace devmgr::podresources
