// Beneath: opening what lies under the registry folder without following a symlink on the way,
// so that a name swapped for a symlink while the watcher looks at it (a folder on the path, or
// the socket itself) leads nowhere outside. A path is resolved afresh by every system call that
// takes one, and O_NOFOLLOW and IN_DONT_FOLLOW protect only its last name; here each name is
// opened in the folder opened before it, and what was opened is then reached through its
// descriptor ("/proc/self/fd/N"), never through the path again. Internal to pluginwatcher/.
#pragma once

#include <filesystem>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace devmgr::pluginwatcher {

// kProcSelfFd: the folder that names each open descriptor of this process (Fd::ProcPath).
inline constexpr char kProcSelfFd[] = "/proc/self/fd";

// Fd owns a file descriptor (none: -1) and closes it.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();

  int Get() const { return fd_; }
  bool Valid() const { return fd_ >= 0; }
  // Release gives the descriptor up to the caller, who closes it.
  int Release() { return std::exchange(fd_, -1); }

  // ProcPath is "/proc/self/fd/N": a name the kernel resolves to the very file the descriptor
  // refers to (a folder to watch, a socket to connect to, even one opened with O_PATH), for as
  // long as it stays open, whatever is renamed onto its path meanwhile. Needs /proc mounted
  // (CheckFdFolder).
  std::string ProcPath() const;

 private:
  int fd_ = -1;
};

// CheckFdFolder: OK when `fd_folder` names this process's descriptors as /proc/self/fd does:
// the name of a descriptor there leads to the file it is open on. FailedPrecondition naming
// `fd_folder` otherwise (/proc not mounted, say): the watcher reaches the folders and sockets
// under its registry only through those names, so that none could be watched or dialled.
absl::Status CheckFdFolder(const std::filesystem::path& fd_folder);

// NormalFolderPath: `path` made lexically normal, without a trailing separator ("/a/b/" and
// "/a/./b" are "/a/b"), so that "<folder>/" begins exactly the paths under it. The root stays "/".
std::filesystem::path NormalFolderPath(const std::filesystem::path& path);

// OpenBeneath opens `path`, which must lie under `root` (both normal, as NormalFolderPath gives),
// one name at a time from `root`: each folder on the way with O_PATH | O_DIRECTORY | O_NOFOLLOW,
// the last name with `flags` | O_NOFOLLOW | O_CLOEXEC. `root` itself is opened as it is: it may
// be a symlink to a folder (an operator's choice). With O_PATH in `flags` a symlink at the last
// name is opened itself (fstat tells); without it, a symlink there fails.
// Errors, as ErrnoStatus gives them: NotFound when a name is gone, FailedPrecondition (ENOTDIR,
// ELOOP) when a symlink or a file stands where a folder must be or a symlink at the last name,
// InvalidArgument when `path` is not under `root`, and others (PermissionDenied,
// ResourceExhausted for no descriptors left) when it cannot be told what is there.
absl::StatusOr<Fd> OpenBeneath(const std::filesystem::path& root, const std::filesystem::path& path,
                               int flags);

// GoneOrReplaced: `status`, from OpenBeneath, says that no folder or file of the kind asked for
// is at the path any more (a name gone, or a symlink or a file in a folder's place): what was
// there left, and its event follows.
bool GoneOrReplaced(const absl::Status& status);

}  // namespace devmgr::pluginwatcher
