// Folders whose names survive a power cut. A file made durable (its fsync, and its folder's) is
// still lost with its folder if the folder was new and the entry naming it, in the folder above,
// was never flushed: ext4 in its default mode happens to flush it with the file, XFS and btrfs
// need not.
#pragma once

#include <sys/types.h>

#include <filesystem>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace devmgr {

// CreateFolders makes `folder` and every missing folder above it, outermost first, and fsyncs the
// folder that holds each one it made. `folder` itself is made with `mode`, those above it with
// 0777, both less the umask (mkdir's rule; chmod after for an exact mode). Returns whether it
// made `folder`; false when it was there, or another process made it first. An existing path
// that is not a folder is an error (ENOTDIR or EEXIST).
absl::StatusOr<bool> CreateFolders(const std::filesystem::path& folder, mode_t mode);

// SyncFolder fsyncs `folder`: the names put in it or taken from it survive a power cut.
absl::Status SyncFolder(const std::filesystem::path& folder);

}  // namespace devmgr
