// CheckpointStoreImpl: the production CheckpointStore, a FileStore (common/file_store.h) in one
// folder, normally the manager's plugin_dir, where the kubelet keeps its checkpoint too. List
// sees every entry of the folder not starting with '.', plugin sockets included, as the
// kubelet's test for a wiped node does.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/file_store.h"
#include "devicemanager/checkpoint_store.h"

namespace devmgr::devicemanager {

class CheckpointStoreImpl final : public CheckpointStore {
 public:
  // `store` may carry a FileStore::FaultHook (tests inject write failures that way).
  explicit CheckpointStoreImpl(FileStore store) : store_(std::move(store)) {}

  absl::StatusOr<std::string> Read(absl::string_view name) const override;
  absl::Status Write(absl::string_view name, absl::string_view bytes) override;
  absl::StatusOr<std::vector<std::string>> List() const override;

 private:
  const FileStore store_;
};

}  // namespace devmgr::devicemanager
