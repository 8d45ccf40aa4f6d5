#include "pluginwatcher/inotify_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/errno_status.h"
#include "pluginwatcher/beneath.h"

namespace devmgr::pluginwatcher {
namespace {

// No IN_DONT_FOLLOW: the root may be a symlink to a folder, and every other folder is watched
// through its descriptor's /proc/self/fd link, which must be followed.
constexpr uint32_t kWatchMask =
    IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE_SELF | IN_ONLYDIR;

bool IsHidden(const std::filesystem::path& path) {
  return absl::StartsWith(path.filename().string(), ".");
}

// ErrnoText: the text of an errno value, as std::filesystem's errors give it (strerror is not
// thread-safe).
std::string ErrnoText(int error) {
  return std::error_code(error, std::generic_category()).message();
}

// IsAtOrUnder: `path` is `dir` or lies under it.
bool IsAtOrUnder(const std::string& path, const std::string& dir) {
  return path == dir || absl::StartsWith(path, dir + "/");
}

}  // namespace

bool TreeWalk::Unknown(const std::string& path) const {
  for (const std::string& folder : unread) {
    if (IsAtOrUnder(path, folder)) return true;
  }
  return false;
}

InotifyTree::InotifyTree(boost::asio::io_context& context, const std::filesystem::path& root,
                         InotifyTreeCallbacks callbacks, LoggerPtr logger)
    : root_(NormalFolderPath(root)),
      callbacks_(std::move(callbacks)),
      log_(std::move(logger)),
      descriptor_(context) {}

std::error_code InotifyTree::CreateRoot() const {
  std::error_code ec;
  const bool created = std::filesystem::create_directories(root_, ec);
  // Upstream's mode for a folder the watcher makes, whatever the umask; one that exists keeps
  // its own.
  std::error_code ignored;
  if (created) std::filesystem::permissions(root_, std::filesystem::perms(0755), ignored);
  return ec;
}

absl::Status InotifyTree::Start() {
  if (const std::error_code ec = CreateRoot(); ec) {
    return ErrnoStatus(ec, "error (re-)creating root", root_);
  }
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "failed to start plugin watcher: inotify_init1");
  descriptor_.assign(fd);
  if (!WatchRoot()) {
    const int error = errno;
    Close();
    return ErrnoStatus(error, "failed to watch", root_);
  }
  AddAndReportTree(root_);
  Read();
  return absl::OkStatus();
}

void InotifyTree::Close() {
  if (!descriptor_.is_open()) return;
  boost::system::error_code ec;
  descriptor_.cancel(ec);
  descriptor_.close(ec);
  watches_.clear();
}

bool InotifyTree::WatchRoot() {
  // The root may be a symlink to a folder (an operator's choice; fsnotify follows it too), and is
  // watched and opened through its path; nothing under it is.
  const int wd = ::inotify_add_watch(descriptor_.native_handle(), root_.c_str(), kWatchMask);
  struct stat st {};
  if (wd < 0 || ::stat(root_.c_str(), &st) != 0) {
    const int error = errno;
    if (wd >= 0) ::inotify_rm_watch(descriptor_.native_handle(), wd);
    DEVMGR_LOG(log_, err, "Failed to watch folder", "path", root_.string(), "err",
               ErrnoText(error));
    errno = error;  // for the caller's status
    return false;
  }
  watches_[wd] = Watch{root_.string(), FileIdOf(st)};
  return true;
}

bool InotifyTree::WatchFolder(const Fd& folder, const std::string& path) {
  struct stat st {};
  int wd = -1;
  // Through the descriptor, not the path: a folder on the path may have been swapped for a
  // symlink since the folder was opened, and IN_DONT_FOLLOW would guard only the last name.
  if (::fstat(folder.Get(), &st) == 0) {
    wd = ::inotify_add_watch(descriptor_.native_handle(), folder.ProcPath().c_str(), kWatchMask);
  }
  if (wd < 0) {
    const int error = errno;
    DEVMGR_LOG(log_, err, "Failed to watch folder", "path", path, "err", ErrnoText(error));
    return false;
  }
  // The same folder watched again (by a rescan) keeps its watch descriptor.
  watches_[wd] = Watch{path, FileIdOf(st)};
  return true;
}

absl::StatusOr<Fd> InotifyTree::OpenFolder(const std::filesystem::path& folder, int flags) const {
  if (folder == root_) {
    Fd fd(::open(root_.c_str(), flags | O_DIRECTORY | O_CLOEXEC));
    if (!fd.Valid()) return ErrnoStatus(errno, "cannot open", root_);
    return fd;
  }
  return OpenBeneath(root_, folder, flags | O_DIRECTORY);
}

void InotifyTree::AddTree(const std::filesystem::path& dir, TreeWalk& walk) {
  std::vector<std::filesystem::path> folders{dir};
  while (!folders.empty()) {
    const std::filesystem::path folder = std::move(folders.back());
    folders.pop_back();
    ListFolder(folder, folder == dir, folders, walk);
  }
}

void InotifyTree::ListFolder(const std::filesystem::path& folder, bool top,
                             std::vector<std::filesystem::path>& folders, TreeWalk& walk) {
  // The kernel takes no longer path, and no tool could reach the folder by its name: it counts
  // as one that cannot be read, as when the walk went by paths.
  if (folder.native().size() >= PATH_MAX) {
    DEVMGR_LOG(log_, err, "Error accessing path", "path", folder.string(), "err",
               ErrnoText(ENAMETOOLONG));
    walk.unread.push_back(folder.string());
    return;
  }
  absl::StatusOr<Fd> fd = OpenFolder(folder, O_RDONLY);
  if (!fd.ok()) {
    // A folder gone since it was listed, or swapped for a symlink or a file, takes its sockets
    // along: nothing is unknown there (its own event follows).
    if (GoneOrReplaced(fd.status())) return;
    DEVMGR_LOG(log_, err, "Error accessing path", "path", folder.string(), "err",
               fd.status().message());
    walk.unread.push_back(folder.string());
    return;
  }
  // Watch a folder before it is listed, so that nothing created in it is missed. The root is
  // watched apart, and a folder found by this walk is listed even if its watch fails.
  if (folder != root_ && !WatchFolder(*fd, folder.string()) && top) {
    walk.unread.push_back(folder.string());
    return;
  }
  const std::unique_ptr<DIR, int (*)(DIR*)> listing(::fdopendir(fd->Get()), ::closedir);
  if (listing == nullptr) {
    const int error = errno;
    DEVMGR_LOG(log_, err, "Error accessing path", "path", folder.string(), "err", ErrnoText(error));
    walk.unread.push_back(folder.string());
    return;
  }
  fd->Release();  // the listing owns it now
  while (true) {
    errno = 0;
    // readdir is safe on a stream no other thread reads, as this one (readdir_r is deprecated).
    // NOLINTNEXTLINE(concurrency-mt-unsafe)
    const dirent* entry = ::readdir(listing.get());
    if (entry == nullptr) {
      if (const int error = errno; error != 0) {
        DEVMGR_LOG(log_, err, "Error accessing path", "path", folder.string(), "err",
                   ErrnoText(error));
        walk.unread.push_back(folder.string());
      }
      return;
    }
    const std::string name = entry->d_name;
    if (absl::StartsWith(name, ".")) continue;  // hidden, and "." and ".."
    const std::filesystem::path path = folder / name;
    // Looked at in the folder listed, not through the path, which may lead elsewhere by now.
    mode_t type = 0;
    const std::optional<FileId> id = FileIdAt(::dirfd(listing.get()), name.c_str(), &type);
    if (!id.has_value()) {
      const int error = errno;
      if (error == ENOENT) continue;  // gone since it was listed
      // What it is cannot be told: a folder, maybe, or a socket.
      DEVMGR_LOG(log_, err, "Error accessing path", "path", path.string(), "err", ErrnoText(error));
      walk.unread.push_back(path.string());
      continue;
    }
    if (S_ISDIR(type)) {
      folders.push_back(path);
    } else if (S_ISSOCK(type)) {
      walk.sockets[path.string()] = *id;
    }
  }
}

std::optional<InotifyTree::Entry> InotifyTree::StatInWatchedFolder(const Watch& watch,
                                                                   const std::string& name) const {
  absl::StatusOr<Fd> folder = OpenFolder(watch.path, O_PATH);
  if (!folder.ok()) {
    if (!GoneOrReplaced(folder.status())) {
      DEVMGR_LOG(log_, err, "Error accessing path", "path", watch.path, "err",
                 folder.status().message());
    }
    return std::nullopt;
  }
  struct stat st {};
  // The folder now at the watch's path is another one: the watched folder was moved or deleted,
  // and the event saying so is further in the queue.
  if (::fstat(folder->Get(), &st) != 0 || !FileIdOf(st).Same(watch.id)) return std::nullopt;
  Entry entry;
  const std::optional<FileId> id = FileIdAt(folder->Get(), name.c_str(), &entry.type);
  if (!id.has_value()) return std::nullopt;
  entry.id = *id;
  return entry;
}

void InotifyTree::AddAndReportTree(const std::filesystem::path& dir) {
  TreeWalk walk;
  AddTree(dir, walk);
  for (const auto& [path, id] : walk.sockets) callbacks_.on_socket(path, id);
}

void InotifyTree::RemoveWatches(const std::string& dir) {
  for (auto it = watches_.begin(); it != watches_.end();) {
    if (IsAtOrUnder(it->second.path, dir)) {
      ::inotify_rm_watch(descriptor_.native_handle(), it->first);
      it = watches_.erase(it);
    } else {
      ++it;
    }
  }
}

void InotifyTree::Read() {
  descriptor_.async_read_some(
      boost::asio::buffer(buffer_), [this](const boost::system::error_code& ec, size_t bytes) {
        if (ec == boost::asio::error::operation_aborted) return;
        if (ec) {
          DEVMGR_LOG(log_, err, "Plugin watcher read failed", "err", ec.message());
          return;
        }
        HandleEvents(bytes);
        if (descriptor_.is_open()) Read();
      });
}

void InotifyTree::HandleEvents(size_t bytes) {
  bool overflow = false;
  bool root_gone = false;
  size_t offset = 0;
  while (offset + sizeof(inotify_event) <= bytes) {
    inotify_event event{};
    std::memcpy(&event, buffer_.data() + offset, sizeof(event));
    const char* name_bytes = buffer_.data() + offset + sizeof(inotify_event);
    offset += sizeof(inotify_event) + event.len;
    if (event.mask & IN_Q_OVERFLOW) {
      overflow = true;
      continue;
    }
    auto watch = watches_.find(event.wd);
    if (watch == watches_.end()) continue;
    if (event.mask & IN_IGNORED) {
      // The folder itself was deleted (IN_DELETE_SELF comes first): its parent reported it.
      const bool is_root = watch->second.path == root_.string();
      watches_.erase(watch);
      if (is_root) root_gone = true;
      continue;
    }
    if (event.len == 0) continue;
    const std::string name(name_bytes, ::strnlen(name_bytes, event.len));
    const std::filesystem::path path = std::filesystem::path(watch->second.path) / name;
    if (event.mask & (IN_DELETE | IN_MOVED_FROM)) {
      // A folder moved elsewhere keeps its watches, under a path that is no longer true.
      if ((event.mask & (IN_MOVED_FROM | IN_ISDIR)) == (IN_MOVED_FROM | IN_ISDIR)) {
        RemoveWatches(path.string());
      }
      callbacks_.on_removed(path.string());
      continue;
    }
    if (!(event.mask & (IN_CREATE | IN_MOVED_TO)) || IsHidden(path)) continue;
    // Gone again (its delete follows), or its folder moved or replaced (that event follows).
    const std::optional<Entry> entry = StatInWatchedFolder(watch->second, name);
    if (!entry) continue;
    if (S_ISDIR(entry->type)) {
      AddAndReportTree(path);
    } else if (S_ISSOCK(entry->type)) {
      callbacks_.on_socket(path.string(), entry->id);
    } else {
      // A symlink, a file, anything that is not a socket: renamed over a socket, it comes with
      // no IN_DELETE for the socket, which is gone all the same.
      callbacks_.on_removed(path.string());
    }
  }
  // The root's IN_IGNORED may be among the events the overflow dropped.
  if (overflow && !root_gone) root_gone = RootWatchLost();
  if (root_gone) RecreateRoot();
  if (overflow) Rescan();
}

bool InotifyTree::RootWatchLost() {
  // A folder watched already gets its own descriptor back; a folder made again at the root's
  // path gets a new one, and none is there to watch when the root is gone.
  const int wd = ::inotify_add_watch(descriptor_.native_handle(), root_.c_str(), kWatchMask);
  auto root = std::find_if(watches_.begin(), watches_.end(),
                           [&](const auto& watch) { return watch.second.path == root_.string(); });
  if (wd >= 0 && root != watches_.end() && root->first == wd) return false;
  if (root != watches_.end()) watches_.erase(root);
  return true;
}

void InotifyTree::Rescan() {
  DEVMGR_LOG(log_, info, "Plugin watcher event queue overflowed, rescanning", "path",
             root_.string());
  TreeWalk walk;
  AddTree(root_, walk);
  callbacks_.on_rescan(walk);
}

void InotifyTree::RecreateRoot() {
  DEVMGR_LOG(log_, err, "Plugin registry folder was deleted, creating it again", "path",
             root_.string());
  callbacks_.on_removed(root_.string());
  const std::error_code ec = CreateRoot();
  if (ec || !WatchRoot()) {
    DEVMGR_LOG(log_, err, "Failed to re-create the plugin registry folder", "path", root_.string(),
               "err", ec.message());
    return;
  }
  AddAndReportTree(root_);
}

}  // namespace devmgr::pluginwatcher
