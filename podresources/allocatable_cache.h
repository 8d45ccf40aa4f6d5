// AllocatableCache: the v1 GetAllocatableResources answer's devices, kept serialized per
// resource between calls, so that a client polling a node with 100,000 devices pays for the
// resources whose devices changed, not for every device (beyond upstream, which builds the whole
// answer each time). Each resource's part is the answer's ContainerDevices entries for it, kept
// with the revision the devices provider reported for that resource; a part is built again when
// that revision changes.
//
// Nothing is kept when the devices provider cannot tell its revisions (the interface's default):
// then every answer is built anew, as upstream. The CPU and memory parts are read every time
// (their providers report no revision); they are small.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "podresources/providers.h"

namespace devmgr::podresources {

class AllocatableCache {
 public:
  // Answer is the serialized AllocatableResourcesResponse for the providers' state now (read
  // after the call began), byte for byte what protobuf writes for the same message.
  // Thread-safe; answers are built one at a time.
  grpc::ByteBuffer Answer(const Providers& providers) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // One resource's ContainerDevices entries, and the revision they were built from.
  struct Part {
    uint64_t revision = 0;
    std::shared_ptr<const std::string> bytes;
  };

  absl::Mutex mu_;
  // By resource name: the resources of the last answer built.
  std::map<std::string, Part> parts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::podresources
