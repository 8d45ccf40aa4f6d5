// RecordingCheckpointStore: the device manager's checkpoint store in devmgr serve. It is the
// plain store of the plugin folder (devicemanager/checkpoint_store_impl.h) except that every
// checkpoint write carries the pod record along when the record has changed (an admission
// staged, see PodRegistry): the two files reach the disk with one flush, which is what makes an
// admission cost one durable write. The record's mark taken with the checkpoint's state
// (Snapshotting) tells the registry which staged admissions that state holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/file_store.h"
#include "devicemanager/checkpoint_store.h"
#include "node/pod_registry.h"

namespace devmgr::node {

class RecordingCheckpointStore final : public devicemanager::CheckpointStore {
 public:
  // `registry` keeps its record in `store`'s folder; not owned, must outlive the store.
  RecordingCheckpointStore(FileStore store, PodRegistry& registry)
      : store_(std::move(store)), registry_(registry) {}

  absl::StatusOr<std::string> Read(absl::string_view name) const override {
    return store_.Read(name);
  }
  // Bytes of unknown state: no staged admission is taken as held.
  absl::Status Write(absl::string_view name, absl::string_view bytes) override {
    return registry_.WriteWithCheckpoint(name, bytes, 0);
  }
  uint64_t Snapshotting() override { return registry_.CheckpointMark(); }
  absl::Status WriteSnapshot(absl::string_view name, absl::string_view bytes,
                             uint64_t snapshotting) override {
    return registry_.WriteWithCheckpoint(name, bytes, snapshotting);
  }
  absl::StatusOr<std::vector<std::string>> List() const override { return store_.List(); }

 private:
  const FileStore store_;
  PodRegistry& registry_;
};

}  // namespace devmgr::node
