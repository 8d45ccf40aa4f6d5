#include "common/file_id.h"

#include <fcntl.h>
#include <sys/sysmacros.h>

namespace devmgr {

FileId FileIdOf(const struct stat& st) {
  return FileId{st.st_dev, st.st_ino,
                static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec,
                /*birth_ns=*/0};
}

std::optional<FileId> FileIdAt(int dirfd, const char* name, mode_t* type) {
  struct statx stx {};
  if (::statx(dirfd, name, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_INO | STATX_CTIME | STATX_BTIME,
              &stx) != 0) {
    return std::nullopt;
  }
  *type = stx.stx_mode & S_IFMT;
  const int64_t birth_ns = (stx.stx_mask & STATX_BTIME) != 0
                               ? stx.stx_btime.tv_sec * 1'000'000'000 + stx.stx_btime.tv_nsec
                               : 0;
  return FileId{makedev(stx.stx_dev_major, stx.stx_dev_minor), stx.stx_ino,
                stx.stx_ctime.tv_sec * 1'000'000'000 + stx.stx_ctime.tv_nsec, birth_ns};
}

std::optional<FileId> StatId(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdOf(st);
}

}  // namespace devmgr
