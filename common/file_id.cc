#include "common/file_id.h"

namespace devmgr {

FileId FileIdOf(const struct stat& st) {
  return FileId{st.st_dev, st.st_ino,
                static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
}

std::optional<FileId> StatId(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdOf(st);
}

}  // namespace devmgr
