// DurableWriter: makes files durable together with whatever its owner has changed and not yet
// written, in one flush of the disk (FileStore::WriteAcross). The node's stores of state chain
// as DurableWriters (the pod record's writes carry the DRA manager's checkpoint, whose writes
// carry the claim record), so that a change left pending by one rides on the next write of
// another: a DRA admission pays one flush before its driver is called and one after, instead
// of one per file.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "common/file_store.h"

namespace devmgr {

class DurableWriter {
 public:
  virtual ~DurableWriter() = default;

  // WriteTogether writes the owner's pending files, then `files`, in that order of renames,
  // with one flush; on success the owner's changes are durable. The store's error otherwise
  // (the owner's changes stay pending).
  virtual absl::Status WriteTogether(std::vector<FileStore::PlacedBytes> files) = 0;
};

// WriteThrough writes `files` through `next`, or alone when it is null.
inline absl::Status WriteThrough(DurableWriter* next, std::vector<FileStore::PlacedBytes> files) {
  if (next != nullptr) return next->WriteTogether(std::move(files));
  return FileStore::WriteAcross(files);
}

}  // namespace devmgr
