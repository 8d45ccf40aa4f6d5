#include "pluginwatcher/inotify_tree.h"

#include <sys/inotify.h>
#include <sys/stat.h>

#include <boost/asio/buffer.hpp>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/errno_status.h"

namespace devmgr::pluginwatcher {
namespace {

constexpr uint32_t kWatchMask = IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM |
                                IN_DELETE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW;

bool IsHidden(const std::filesystem::path& path) {
  return absl::StartsWith(path.filename().string(), ".");
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

InotifyTree::InotifyTree(boost::asio::io_context& context, std::filesystem::path root,
                         InotifyTreeCallbacks callbacks, LoggerPtr logger)
    : root_(std::move(root)),
      callbacks_(std::move(callbacks)),
      log_(std::move(logger)),
      descriptor_(context) {}

absl::Status InotifyTree::Start() {
  std::error_code ec;
  const bool created = std::filesystem::create_directories(root_, ec);
  if (ec) {
    return ErrnoStatus(ec, "error (re-)creating root", root_);
  }
  // Upstream's mode for a folder the watcher makes; one that exists keeps its own.
  if (created) std::filesystem::permissions(root_, std::filesystem::perms(0755), ec);
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "failed to start plugin watcher: inotify_init1");
  descriptor_.assign(fd);
  if (!AddWatch(root_)) {
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

bool InotifyTree::AddWatch(const std::filesystem::path& dir) {
  // The root may be a symlink to a folder (an operator's choice; fsnotify follows it too);
  // nothing under it is followed.
  const uint32_t mask = dir == root_ ? kWatchMask & ~uint32_t{IN_DONT_FOLLOW} : kWatchMask;
  const int wd = ::inotify_add_watch(descriptor_.native_handle(), dir.c_str(), mask);
  if (wd < 0) {
    const int error = errno;
    DEVMGR_LOG(log_, err, "Failed to watch folder", "path", dir.string(), "err",
               std::string(std::strerror(error)));
    errno = error;  // for the caller's status
    return false;
  }
  watches_[wd] = dir.string();
  return true;
}

void InotifyTree::AddTree(const std::filesystem::path& dir, TreeWalk& walk) {
  if (dir != root_ && !AddWatch(dir)) {
    walk.unread.push_back(dir.string());
    return;
  }
  std::vector<std::filesystem::path> folders{dir};
  while (!folders.empty()) {
    const std::filesystem::path folder = std::move(folders.back());
    folders.pop_back();
    std::error_code ec;
    for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::filesystem::path& path = it->path();
      if (IsHidden(path)) continue;
      std::error_code type_ec;
      const std::filesystem::file_type type = it->symlink_status(type_ec).type();
      if (type == std::filesystem::file_type::not_found) continue;  // gone since it was listed
      if (type_ec) {
        // What it is cannot be told: a folder, maybe, or a socket.
        DEVMGR_LOG(log_, err, "Error accessing path", "path", path.string(), "err",
                   type_ec.message());
        walk.unread.push_back(path.string());
        continue;
      }
      // Watch a folder before it is listed, so that nothing created in it is missed.
      if (type == std::filesystem::file_type::directory) {
        AddWatch(path);
        folders.push_back(path);
      } else if (type == std::filesystem::file_type::socket) {
        struct stat st {};
        if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
          walk.sockets[path.string()] = FileIdOf(st);
        }
      }
    }
    // A folder gone since it was listed takes its sockets along: nothing is unknown there.
    if (ec && ec != std::errc::no_such_file_or_directory) {
      DEVMGR_LOG(log_, err, "Error accessing path", "path", folder.string(), "err", ec.message());
      walk.unread.push_back(folder.string());
    }
  }
}

void InotifyTree::AddAndReportTree(const std::filesystem::path& dir) {
  TreeWalk walk;
  AddTree(dir, walk);
  for (const auto& [path, id] : walk.sockets) callbacks_.on_socket(path, id);
}

void InotifyTree::RemoveWatches(const std::string& dir) {
  for (auto it = watches_.begin(); it != watches_.end();) {
    if (IsAtOrUnder(it->second, dir)) {
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
      const bool is_root = watch->second == root_.string();
      watches_.erase(watch);
      if (is_root) root_gone = true;
      continue;
    }
    if (event.len == 0) continue;
    const std::filesystem::path path = std::filesystem::path(watch->second) /
                                       std::string(name_bytes, ::strnlen(name_bytes, event.len));
    if (event.mask & (IN_DELETE | IN_MOVED_FROM)) {
      // A folder moved elsewhere keeps its watches, under a path that is no longer true.
      if ((event.mask & (IN_MOVED_FROM | IN_ISDIR)) == (IN_MOVED_FROM | IN_ISDIR)) {
        RemoveWatches(path.string());
      }
      callbacks_.on_removed(path.string());
      continue;
    }
    if (!(event.mask & (IN_CREATE | IN_MOVED_TO)) || IsHidden(path)) continue;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;  // already gone again; its delete follows
    if (S_ISDIR(st.st_mode)) {
      AddAndReportTree(path);
    } else if (S_ISSOCK(st.st_mode)) {
      callbacks_.on_socket(path.string(), FileIdOf(st));
    }
  }
  if (root_gone) RecreateRoot();
  if (overflow) Rescan();
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
  std::error_code ec;
  std::filesystem::create_directories(root_, ec);
  if (ec || !AddWatch(root_)) {
    DEVMGR_LOG(log_, err, "Failed to re-create the plugin registry folder", "path", root_.string(),
               "err", ec.message());
    return;
  }
  AddAndReportTree(root_);
}

}  // namespace devmgr::pluginwatcher
