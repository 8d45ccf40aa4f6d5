// CheckpointStore: where the manager keeps its checkpoint file (ManagerOptions::
// checkpoint_store). The production store is CheckpointStoreImpl, a FileStore in plugin_dir
// (checkpoint_store_impl.h); tests give the manager stores that fail on demand or keep the file
// in memory.
//
// Threads: the manager serializes Write and WriteSnapshot calls (never two at once);
// Read and List may run at the same time as a write. Every call may block on disk; the manager
// never calls the store holding its state mutex, except Snapshotting.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr::devicemanager {

class CheckpointStore {
 public:
  virtual ~CheckpointStore() = default;

  // Read returns the content of file `name`; NotFound when there is none.
  virtual absl::StatusOr<std::string> Read(absl::string_view name) const = 0;

  // Write replaces file `name` with `bytes` durably and atomically: after an error, the old
  // content is still there (or, after a crash, either the old or the new one). Besides the
  // checkpoint, Start writes "<checkpoint>.corrupt" (or "<checkpoint>.corrupt.N" beside earlier
  // copies: common/damaged_copy.h) with the bytes of a checkpoint that did not verify, which are
  // not a checkpoint; it reads those copies back (Read, List) so as to keep the same bytes once,
  // and a List that leaves one out lets the next copy replace it.
  virtual absl::Status Write(absl::string_view name, absl::string_view bytes) = 0;

  // Snapshotting is called under the manager's state mutex as it takes the state a checkpoint
  // write will hold, and WriteSnapshot then writes that state's bytes with the number it
  // returned: a store that writes state of its own beside the checkpoint (devmgr serve's pod
  // record) learns which of its own changes came before the checkpoint's state was taken.
  // Snapshotting must be quick and must not call the manager. By default 0, and WriteSnapshot
  // is Write.
  virtual uint64_t Snapshotting() { return 0; }
  virtual absl::Status WriteSnapshot(absl::string_view name, absl::string_view bytes,
                                     uint64_t /*snapshotting*/) {
    return Write(name, bytes);
  }

  // List returns the names of the store's files, sorted: empty means the node's device state
  // was wiped (see Manager::ShouldResetExtendedResourceCapacity).
  virtual absl::StatusOr<std::vector<std::string>> List() const = 0;
};

using CheckpointStorePtr = std::unique_ptr<CheckpointStore>;

}  // namespace devmgr::devicemanager
