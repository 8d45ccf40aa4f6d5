#include "pluginwatcher/beneath.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/errno_status.h"
#include "common/file_id.h"

namespace devmgr::pluginwatcher {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

std::string Fd::ProcPath() const { return absl::StrCat(kProcSelfFd, "/", fd_); }

absl::Status CheckFdFolder(const std::filesystem::path& fd_folder) {
  Fd probe(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!probe.Valid()) return ErrnoStatus(errno, "cannot open", "/");
  struct stat opened {};
  if (::fstat(probe.Get(), &opened) != 0) return ErrnoStatus(errno, "cannot stat", "/");
  const std::filesystem::path name = fd_folder / std::to_string(probe.Get());
  struct stat named {};
  std::string problem;
  if (::stat(name.c_str(), &named) != 0) {
    problem = std::string(ErrnoStatus(errno, "cannot stat", name).message());
  } else if (!FileIdOf(opened).Same(FileIdOf(named))) {
    problem = absl::StrCat(name.string(), " is not the file its descriptor is open on");
  } else {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrCat(fd_folder.string(), " is not available (is /proc mounted?): ", problem,
                   "; the plugin watcher reaches the folders and sockets under its registry "
                   "only through it"));
}

std::filesystem::path NormalFolderPath(const std::filesystem::path& path) {
  std::filesystem::path normal = path.lexically_normal();
  // "/a/b/" has an empty last name; "/" has no relative part to drop.
  if (!normal.has_filename() && normal.has_relative_path()) normal = normal.parent_path();
  return normal;
}

absl::StatusOr<Fd> OpenBeneath(const std::filesystem::path& root, const std::filesystem::path& path,
                               int flags) {
  const std::filesystem::path relative = path.lexically_relative(root);
  bool under = !relative.empty();
  for (const std::filesystem::path& name : relative) under = under && name != "." && name != "..";
  if (!under) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(), " does not lie under ", root.string()));
  }
  Fd folder(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!folder.Valid()) return ErrnoStatus(errno, "cannot open", root);
  std::filesystem::path reached = root;
  for (auto name = relative.begin(); name != relative.end(); ++name) {
    reached /= *name;
    const bool last = std::next(name) == relative.end();
    const int name_flags = (last ? flags : O_PATH | O_DIRECTORY) | O_NOFOLLOW | O_CLOEXEC;
    Fd next(::openat(folder.Get(), name->c_str(), name_flags));
    if (!next.Valid()) return ErrnoStatus(errno, "cannot open", reached);
    folder = std::move(next);
  }
  return folder;
}

bool GoneOrReplaced(const absl::Status& status) {
  return absl::IsNotFound(status) || absl::IsFailedPrecondition(status);
}

}  // namespace devmgr::pluginwatcher
