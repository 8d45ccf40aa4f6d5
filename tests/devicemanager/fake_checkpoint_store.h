// FakeCheckpointStore: a CheckpointStore in memory for unit tests of the manager, whose writes
// fail on demand (the content stays as it was, as with a real failed write) and are counted.
// Thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "devicemanager/checkpoint_store.h"

namespace devmgr::testing {

class FakeCheckpointStore final : public devicemanager::CheckpointStore {
 public:
  absl::StatusOr<std::string> Read(absl::string_view name) const override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Write(absl::string_view name, absl::string_view bytes) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<std::string>> List() const override ABSL_LOCKS_EXCLUDED(mu_);

  // FailWrites makes every later Write fail with `status` (OK: succeed again); with `count`,
  // only the next `count` writes, and the ones after them succeed again.
  void FailWrites(absl::Status status, int count = -1) ABSL_LOCKS_EXCLUDED(mu_);
  // Writes attempted so far, failed ones included.
  int writes() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::string, std::less<>> files_ ABSL_GUARDED_BY(mu_);
  absl::Status write_status_ ABSL_GUARDED_BY(mu_);
  // Writes left to fail with write_status_; negative: all of them.
  int failures_left_ ABSL_GUARDED_BY(mu_) = -1;
  int writes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace devmgr::testing
