// InotifyTree: watches a folder and every sub-folder under it with inotify, read through a
// Boost.Asio descriptor (no polling), and reports the unix sockets that appear in the tree and the
// paths that leave it (upstream's fsnotify use in plugin_watcher.go: watch first, then walk).
//
// Names starting with "." are ignored, files and folders alike, and so is everything that is
// neither a socket nor a folder; one that takes a socket's name (renamed over it: no IN_DELETE
// comes for the socket) counts as the socket's removal. Symbolic links are not followed, not even
// one that takes the place of a folder on the path while the tree is walked or events wait in
// the queue: every folder below the root is opened a name at a time (OpenBeneath) and watched
// through its descriptor, and an event's name is looked at in the folder the event came from. A
// folder that appears is watched and walked; a folder that leaves takes everything under it
// along. If the tree's root itself is deleted, it reports the root as removed, creates it again
// and watches it anew. When the kernel's event queue overflows, it walks the whole tree again and
// reports the set of sockets it found with the folders it could not read. A folder that cannot be
// read is logged and the walk goes on with the rest of the tree (upstream's walk does the same).
#pragma once

#include <sys/stat.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/file_id.h"
#include "common/logging.h"
#include "pluginwatcher/beneath.h"

namespace devmgr::pluginwatcher {

// Sockets by absolute path.
using SocketSet = std::map<std::string, FileId>;

// What a walk of the tree found: the sockets, and the entries it could not read (folders it
// could not list, names whose type it could not tell), under which sockets may be unknown.
struct TreeWalk {
  SocketSet sockets;
  std::vector<std::string> unread;
  // `path` lies at or under a folder the walk could not read.
  bool Unknown(const std::string& path) const;
};

struct InotifyTreeCallbacks {
  // A socket is at `path` (created, moved in, or found by a walk). May repeat for one socket.
  std::function<void(const std::string& path, const FileId& id)> on_socket;
  // `path` and everything under it are gone (deleted or moved away).
  std::function<void(const std::string& path)> on_removed;
  // Events were lost: `walk` holds every socket in the tree, but for those under the folders
  // it could not read.
  std::function<void(const TreeWalk& walk)> on_rescan;
};

// Threading: every method, and every callback, runs on the thread that runs `context` (the loop).
class InotifyTree {
 public:
  // `root` is taken lexically normal, without a trailing separator (NormalFolderPath): the paths
  // reported are `root` + "/" + the names under it, and `root` itself when it is deleted.
  InotifyTree(boost::asio::io_context& context, const std::filesystem::path& root,
              InotifyTreeCallbacks callbacks, LoggerPtr logger);
  InotifyTree(const InotifyTree&) = delete;
  InotifyTree& operator=(const InotifyTree&) = delete;

  // Start creates the root (mode 0755, with parents) if missing, watches it, walks it (reporting
  // the sockets there through on_socket) and starts reading events. Errors below the root are
  // only logged.
  absl::Status Start();

  // Close stops reading and closes the inotify descriptor, with every watch; no callback runs
  // after it. Idempotent.
  void Close();

 private:
  // A watched folder: its path, and which folder it is, to tell whether the folder now at that
  // path is still the one watched.
  struct Watch {
    std::string path;
    FileId id;
  };
  // An entry of a watched folder: its type (S_IFMT bits) and its id, birth time included.
  struct Entry {
    mode_t type = 0;
    FileId id;
  };

  // Watches `dir` and the folders under it and collects the sockets there into `walk`.
  void AddTree(const std::filesystem::path& dir, TreeWalk& walk);
  // ListFolder watches `folder` (not the root: WatchRoot) and lists it, adding the folders in it
  // to `folders` and its sockets to `walk`. `top`: the folder AddTree was given, which is not
  // listed when its watch fails.
  void ListFolder(const std::filesystem::path& folder, bool top,
                  std::vector<std::filesystem::path>& folders, TreeWalk& walk);
  // AddTree, each socket found reported through on_socket.
  void AddAndReportTree(const std::filesystem::path& dir);
  // WatchRoot watches the root through its path; false, with errno set, when it cannot.
  bool WatchRoot();
  // WatchFolder watches the folder `folder` is open on, whose path is `path`.
  bool WatchFolder(const Fd& folder, const std::string& path);
  // OpenFolder opens the root, or a folder under it without following a symlink on the way.
  absl::StatusOr<Fd> OpenFolder(const std::filesystem::path& folder, int flags) const;
  // StatInWatchedFolder: what `name` is (not following a symlink) in the folder `watch` is on;
  // nullopt when it is gone, or when the folder at the watch's path is no longer that folder.
  std::optional<Entry> StatInWatchedFolder(const Watch& watch, const std::string& name) const;
  // Forgets the watches at and under `dir`, which has moved away.
  void RemoveWatches(const std::string& dir);
  void Read();
  void HandleEvents(size_t bytes);
  void Rescan();
  void RecreateRoot();
  // RootWatchLost: the root's watch no longer watches the folder at its path (the folder was
  // deleted, and maybe made again); its watch entry is then dropped.
  bool RootWatchLost();
  // CreateRoot makes the root folder, and its parents, if missing.
  std::error_code CreateRoot() const;

  const std::filesystem::path root_;
  const InotifyTreeCallbacks callbacks_;
  const LoggerPtr log_;
  boost::asio::posix::stream_descriptor descriptor_;
  // Watched folders by watch descriptor.
  std::map<int, Watch> watches_;
  alignas(8) std::array<char, 64 * 1024> buffer_{};
};

}  // namespace devmgr::pluginwatcher
