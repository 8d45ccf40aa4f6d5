// FileId: which file is at a path, told apart from one created there later.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>

namespace devmgr {

// The change time is part of the id because file systems reuse a freed inode number at once.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  int64_t ctime_ns = 0;
  bool operator==(const FileId&) const = default;
  // The same file, changed since or not.
  bool Same(const FileId& other) const { return dev == other.dev && ino == other.ino; }
};

// FileIdOf: the id of the file `st` describes.
FileId FileIdOf(const struct stat& st);

// StatId: the id of what is at `path` itself (a symlink's own, not its target's); nullopt when
// nothing is there.
std::optional<FileId> StatId(const std::filesystem::path& path);

}  // namespace devmgr
