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
//   per pod). Where the providers also tell which pods changed since a revision
//   (ActivePodsChangedSince, PodsWithAllocationsChangedSince) and the last answer built listed
//   every pod in UID order, only the pods named are read: the answer is then the kept parts in
//   UID order, without reading the list of active pods at all.
//
// Nothing is reused unless every provider that contributes can tell its revisions: the pods,
// devices and dynamic resources (if any) providers report them, and there is no CPU or memory
// provider (their interfaces have none). Otherwise every pod is read for every List, as
// upstream.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

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
  // UpdatedLocked: the answer from the kept parts with the pods changed since key_ read again,
  // or nullopt where the providers cannot tell which pods changed.
  std::optional<grpc::ByteBuffer> UpdatedLocked(const Providers& providers, const Key& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // BuiltLocked: the answer from every active pod, the kept parts reused where their pod and
  // revisions are the same (none without a key).
  grpc::ByteBuffer BuiltLocked(const Providers& providers, const std::optional<Key>& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

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
  std::map<std::string, PodPart, std::less<>> parts_ ABSL_GUARDED_BY(mu_);
  uint64_t builds_ ABSL_GUARDED_BY(mu_) = 0;
  // The last BuiltLocked listed its pods in UID order and kept a part for each.
  bool whole_in_uid_order_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace devmgr::podresources
