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
  // When the file was created, where the file system records it and the id was taken with
  // FileIdAt; 0 otherwise.
  int64_t birth_ns = 0;
  bool operator==(const FileId&) const = default;
  // The same file, changed since or not.
  bool Same(const FileId& other) const { return dev == other.dev && ino == other.ino; }
  // The same file, and not another one created since under its reused inode number: told by
  // the birth time where both ids have one (a chmod, a chown or a new link leave it as it
  // was), else by the change time (which those change too).
  bool SameCreation(const FileId& other) const {
    if (!Same(other)) return false;
    if (birth_ns != 0 && other.birth_ns != 0) return birth_ns == other.birth_ns;
    return ctime_ns == other.ctime_ns;
  }
};

// FileIdOf: the id of the file `st` describes (without its birth time).
FileId FileIdOf(const struct stat& st);

// FileIdAt: the id of the entry `name` in the folder open at `dirfd` itself (a symlink's own),
// with its birth time where the file system records one; `*type` gets its S_IFMT bits. nullopt,
// with errno set, when it cannot be read.
std::optional<FileId> FileIdAt(int dirfd, const char* name, mode_t* type);

// StatId: the id of what is at `path` itself (a symlink's own, not its target's); nullopt when
// nothing is there.
std::optional<FileId> StatId(const std::filesystem::path& path);

}  // namespace devmgr
