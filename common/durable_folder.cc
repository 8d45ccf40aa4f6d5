#include "common/durable_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <vector>

#include "common/errno_status.h"

namespace devmgr {

absl::Status SyncFolder(const std::filesystem::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot fsync folder", folder);
  const int synced = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (synced != 0) return ErrnoStatus(error, "cannot fsync folder", folder);
  return absl::OkStatus();
}

absl::StatusOr<bool> CreateFolders(const std::filesystem::path& folder, mode_t mode) {
  // Not normalised: "link/.." is the folder above the link's target, which only the kernel
  // knows. A trailing separator names the same folder.
  std::filesystem::path target = folder;
  while (!target.has_filename() && target.has_parent_path() && target != target.parent_path()) {
    target = target.parent_path();
  }
  // The missing folders, innermost first; the first path that exists ends the walk.
  std::vector<std::filesystem::path> missing;
  for (std::filesystem::path at = target; !at.empty(); at = at.parent_path()) {
    struct stat st {};
    if (::lstat(at.c_str(), &st) == 0) break;
    if (errno != ENOENT) return ErrnoStatus(errno, "cannot create folder", at);
    missing.push_back(at);
    if (at == at.parent_path()) break;
  }
  bool made = false;
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    made = ::mkdir(it->c_str(), *it == target ? mode : 0777) == 0;
    if (!made && errno != EEXIST) return ErrnoStatus(errno, "cannot create folder", *it);
    if (!made) continue;
    const std::filesystem::path above = it->has_parent_path() ? it->parent_path() : ".";
    if (absl::Status synced = SyncFolder(above); !synced.ok()) return synced;
  }
  std::error_code error;
  if (!std::filesystem::is_directory(target, error)) {
    return ErrnoStatus(error ? error : std::make_error_code(std::errc::not_a_directory),
                       "cannot create folder", target);
  }
  return made;
}

}  // namespace devmgr
