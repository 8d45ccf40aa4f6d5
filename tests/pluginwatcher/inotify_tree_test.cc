// InotifyTree on an io_context that the test runs itself, so that the kernel's event queue can
// be made to overflow before anything reads it.
#include "pluginwatcher/inotify_tree.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::pluginwatcher {
namespace {

// MakeSocketFile leaves a unix socket file at `path`: bound, then closed.
void MakeSocketFile(const std::filesystem::path& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API.
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << path;
  ::close(fd);
}

// UnreachableFolder: a chain of folders under `parent` whose last one has a path longer than the
// kernel takes (PATH_MAX), made one level at a time relative to the one above: nobody can open it
// by its path, root included. Removed the same way at the end.
class UnreachableFolder {
 public:
  explicit UnreachableFolder(const std::filesystem::path& parent) : path_(parent) {
    int fd = ::open(parent.c_str(), O_DIRECTORY | O_CLOEXEC);
    EXPECT_GE(fd, 0) << parent;
    while (fd >= 0 && path_.string().size() < PATH_MAX) {
      EXPECT_EQ(::mkdirat(fd, kLevel.c_str(), 0755), 0) << path_;
      levels_.push_back(fd);
      fd = ::openat(fd, kLevel.c_str(), O_DIRECTORY | O_CLOEXEC);
      path_ /= kLevel;
    }
    if (fd >= 0) ::close(fd);
  }
  ~UnreachableFolder() {
    // levels_[i] holds level i: remove from the deepest up.
    for (auto it = levels_.rbegin(); it != levels_.rend(); ++it) {
      ::unlinkat(*it, kLevel.c_str(), AT_REMOVEDIR);
      ::close(*it);
    }
  }
  UnreachableFolder(const UnreachableFolder&) = delete;
  UnreachableFolder& operator=(const UnreachableFolder&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  inline static const std::string kLevel = std::string(200, 'd');
  std::filesystem::path path_;
  std::vector<int> levels_;
};

class InotifyTreeTest : public ::testing::Test {
 protected:
  std::filesystem::path Root() const { return dir_.Sub("plugins_registry"); }

  void StartTree() { StartTree(Root()); }
  void StartTree(const std::filesystem::path& root) {
    tree_ = std::make_unique<InotifyTree>(
        context_, root,
        InotifyTreeCallbacks{
            [this](const std::string& path, const FileId& id) {
              sockets_.push_back(path);
              ids_[path] = id;
            },
            [this](const std::string& path) { removed_.push_back(path); },
            [this](const TreeWalk& walk) { rescans_.push_back(walk); },
        },
        nullptr);
    ASSERT_TRUE(tree_->Start().ok());
  }

  // RunUntil runs the loop here until `condition` holds or 10 s pass.
  bool RunUntil(const std::function<bool()>& condition) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!condition()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      context_.run_for(std::chrono::milliseconds(10));
      if (context_.stopped()) context_.restart();
    }
    return true;
  }

  // OverflowTheQueue makes more events than the kernel queues (16384 by default) while nothing
  // reads them.
  void OverflowTheQueue() {
    std::ifstream max_events_file("/proc/sys/fs/inotify/max_queued_events");
    int max_events = 16384;
    max_events_file >> max_events;
    // Each rename is two events (moved from, moved to).
    std::ofstream(Root() / "f0") << "x";
    for (int i = 0; i <= max_events / 2; ++i) {
      std::filesystem::rename(Root() / absl::StrCat("f", i % 2),
                              Root() / absl::StrCat("f", (i + 1) % 2));
    }
  }

  bool Seen(const std::vector<std::string>& paths, const std::filesystem::path& path) const {
    return std::find(paths.begin(), paths.end(), path.string()) != paths.end();
  }

  testing::TempDir dir_;
  boost::asio::io_context context_;
  std::vector<std::string> sockets_;
  std::map<std::string, FileId> ids_;  // the last id reported for each socket
  std::vector<std::string> removed_;
  std::vector<TreeWalk> rescans_;
  std::unique_ptr<InotifyTree> tree_;  // last: closes before the context goes
};

TEST_F(InotifyTreeTest, ReportsSocketsAtStartAndLater) {
  std::filesystem::create_directories(Root() / "sub");
  MakeSocketFile(Root() / "a.sock");
  MakeSocketFile(Root() / "sub" / "b.sock");
  MakeSocketFile(Root() / ".hidden.sock");
  StartTree();
  EXPECT_EQ(sockets_, (std::vector<std::string>{(Root() / "a.sock").string(),
                                                (Root() / "sub" / "b.sock").string()}));

  std::ofstream(Root() / "file") << "x";
  MakeSocketFile(Root() / "sub" / "c.sock");
  ASSERT_TRUE(RunUntil([&] { return Seen(sockets_, Root() / "sub" / "c.sock"); }));
  std::filesystem::remove(Root() / "a.sock");
  ASSERT_TRUE(RunUntil([&] { return Seen(removed_, Root() / "a.sock"); }));
  EXPECT_EQ(sockets_.size(), 3u);
  EXPECT_TRUE(rescans_.empty());
}

// plugins_registry a symlink to a folder elsewhere (an operator's choice): watched and walked
// through it, as fsnotify does; symlinks below it are still never followed.
TEST_F(InotifyTreeTest, ARootThatIsASymlinkToAFolderIsWatched) {
  const std::filesystem::path target = dir_.Sub("elsewhere");
  std::filesystem::create_directories(target / "sub");
  std::filesystem::create_directories(dir_.Sub("outside"));
  MakeSocketFile(target / "a.sock");
  MakeSocketFile(dir_.Sub("outside") / "lure.sock");
  std::filesystem::create_symlink(dir_.Sub("outside"), target / "link");
  std::filesystem::create_directory_symlink(target, Root());
  StartTree();
  EXPECT_EQ(sockets_, std::vector<std::string>{(Root() / "a.sock").string()});
  MakeSocketFile(target / "sub" / "b.sock");
  ASSERT_TRUE(RunUntil([&] { return Seen(sockets_, Root() / "sub" / "b.sock"); }));
  EXPECT_FALSE(Seen(sockets_, Root() / "link" / "lure.sock"));
}

// A folder swapped for a symlink to a folder outside while its events wait in the queue: the
// sub-folder created in it before the swap is looked at in the folder the event came from, not
// through the path, which leads outside now. Before, the event's path was resolved afresh, and
// the folder outside was watched and walked, its socket reported as one inside.
TEST_F(InotifyTreeTest, AFolderSwappedForASymlinkIsNotWalkedThrough) {
  const std::filesystem::path outside = dir_.Sub("outside");
  std::filesystem::create_directories(outside / "sub");
  MakeSocketFile(outside / "sub" / "lure.sock");
  std::filesystem::create_directories(Root() / "d");
  StartTree();
  // Nothing reads while these happen: each event is handled once all of them are done.
  std::filesystem::create_directory(Root() / "d" / "sub");
  std::filesystem::rename(Root() / "d", Root() / ".x");
  std::filesystem::create_directory_symlink(outside, Root() / "d");
  MakeSocketFile(Root() / "z.sock");
  ASSERT_TRUE(RunUntil([&] { return Seen(sockets_, Root() / "z.sock"); }));
  EXPECT_FALSE(Seen(sockets_, Root() / "d" / "sub" / "lure.sock"));
  EXPECT_EQ(sockets_, std::vector<std::string>{(Root() / "z.sock").string()});
  EXPECT_TRUE(Seen(removed_, Root() / "d"));
  // Nor is anything under the folder outside watched: a socket made there is never reported.
  MakeSocketFile(outside / "sub" / "later.sock");
  MakeSocketFile(Root() / "z2.sock");
  ASSERT_TRUE(RunUntil([&] { return Seen(sockets_, Root() / "z2.sock"); }));
  EXPECT_FALSE(Seen(sockets_, Root() / "d" / "sub" / "later.sock"));
}

// A symlink or a regular file that takes a socket's name (renamed over it: no IN_DELETE comes
// for the socket) is reported as the socket's removal. Before, nothing was reported, and the
// socket's entry stayed.
TEST_F(InotifyTreeTest, ANonSocketRenamedOverASocketReportsItRemoved) {
  std::filesystem::create_directories(Root());
  MakeSocketFile(Root() / "a.sock");
  MakeSocketFile(Root() / "b.sock");
  StartTree();
  std::filesystem::create_symlink(dir_.Sub("elsewhere.sock"), Root() / ".a");
  std::filesystem::rename(Root() / ".a", Root() / "a.sock");
  std::ofstream(Root() / ".b") << "x";
  std::filesystem::rename(Root() / ".b", Root() / "b.sock");
  ASSERT_TRUE(RunUntil(
      [&] { return Seen(removed_, Root() / "a.sock") && Seen(removed_, Root() / "b.sock"); }));
  EXPECT_EQ(sockets_.size(), 2U);
}

TEST_F(InotifyTreeTest, RescansWhenTheQueueOverflows) {
  std::filesystem::create_directories(Root());
  MakeSocketFile(Root() / "a.sock");
  StartTree();
  // Nothing reads while these happen.
  std::filesystem::remove(Root() / "a.sock");
  MakeSocketFile(Root() / "b.sock");
  OverflowTheQueue();
  ASSERT_TRUE(RunUntil([&] { return !rescans_.empty(); }));
  const TreeWalk& now = rescans_.back();
  ASSERT_EQ(now.sockets.size(), 1u);
  EXPECT_EQ(now.sockets.begin()->first, (Root() / "b.sock").string());
  EXPECT_TRUE(now.unread.empty());
}

// After lost events, the walk's ids tell a socket whose mode changed (which upstream, ignoring
// chmod events, never takes for a new plugin) from one deleted and created again, though the
// file system may give the new one the freed inode number: by the birth time. Before, the change
// time told them apart, so a chmod during an overflow re-registered the plugin.
TEST_F(InotifyTreeTest, ARescanTellsASocketsChangeFromItsRecreation) {
  std::filesystem::create_directories(Root());
  MakeSocketFile(Root() / "changed.sock");
  MakeSocketFile(Root() / "recreated.sock");
  StartTree();
  ASSERT_EQ(ids_.size(), 2U);
  const FileId changed = ids_.at((Root() / "changed.sock").string());
  const FileId recreated = ids_.at((Root() / "recreated.sock").string());
  mode_t type = 0;
  const std::optional<FileId> probe = FileIdAt(AT_FDCWD, (Root() / "changed.sock").c_str(), &type);
  ASSERT_TRUE(probe.has_value());
  if (probe->birth_ns == 0) GTEST_SKIP() << "this file system records no birth times";
  // Where file times move once per clock tick (kernels before 6.13), a change or a creation in
  // the same tick keeps the time: each is made again until its time differs, for a bound.
  const auto time_of = [&](const char* name, int64_t FileId::*field) {
    mode_t ignored = 0;
    return FileIdAt(AT_FDCWD, (Root() / name).c_str(), &ignored).value_or(FileId{}).*field;
  };
  mode_t mode = 0600;
  ASSERT_TRUE(testing::WaitFor([&] {
    EXPECT_EQ(::chmod((Root() / "changed.sock").c_str(), mode ^= 0044), 0);
    return time_of("changed.sock", &FileId::ctime_ns) != changed.ctime_ns;
  }));
  ASSERT_TRUE(testing::WaitFor([&] {
    std::filesystem::remove(Root() / "recreated.sock");
    MakeSocketFile(Root() / "recreated.sock");
    return time_of("recreated.sock", &FileId::birth_ns) != recreated.birth_ns;
  }));
  OverflowTheQueue();
  ASSERT_TRUE(RunUntil([&] { return !rescans_.empty(); }));
  const SocketSet& now = rescans_.back().sockets;
  ASSERT_EQ(now.size(), 2U);
  const FileId& changed_now = now.at((Root() / "changed.sock").string());
  EXPECT_TRUE(changed_now.SameCreation(changed));
  EXPECT_FALSE(now.at((Root() / "recreated.sock").string()).SameCreation(recreated));
}

// A folder that cannot be read (nor its type told, here) is logged and named in the rescan's
// result, so that the plugins under it are not taken for gone; the walk goes on with the rest of
// the tree (it stopped there, and a rescan then dropped every plugin it had not reached yet).
TEST_F(InotifyTreeTest, AFolderThatCannotBeReadIsReportedAndTheWalkGoesOn) {
  std::vector<std::string> expected;
  for (const char* name : {"a", "b", "c", "d", "e", "f", "g", "h"}) {
    std::filesystem::create_directories(Root() / name);
    MakeSocketFile(Root() / name / "p.sock");
    expected.push_back((Root() / name / "p.sock").string());
  }
  std::filesystem::create_directories(Root() / "m");
  const UnreachableFolder deep(Root() / "m");
  StartTree();
  std::sort(sockets_.begin(), sockets_.end());
  EXPECT_EQ(sockets_, expected);

  OverflowTheQueue();
  ASSERT_TRUE(RunUntil([&] { return !rescans_.empty(); }));
  const TreeWalk& now = rescans_.back();
  std::vector<std::string> found;
  for (const auto& [path, id] : now.sockets) found.push_back(path);
  EXPECT_EQ(found, expected);
  EXPECT_EQ(now.unread, std::vector<std::string>{deep.path().string()});
  EXPECT_TRUE(now.Unknown((deep.path() / "q.sock").string()));
  EXPECT_TRUE(now.Unknown(deep.path().string()));
  EXPECT_FALSE(now.Unknown((Root() / "a" / "p.sock").string()));
  EXPECT_FALSE(now.Unknown(deep.path().string() + "x/q.sock"));
}

TEST_F(InotifyTreeTest, RootDeletedIsCreatedAgain) {
  StartTree();
  std::filesystem::remove_all(Root());
  ASSERT_TRUE(RunUntil([&] { return Seen(removed_, Root()); }));
  EXPECT_TRUE(std::filesystem::is_directory(Root()));
  MakeSocketFile(Root() / "a.sock");
  ASSERT_TRUE(RunUntil([&] { return Seen(sockets_, Root() / "a.sock"); }));
}

// The root deleted while the kernel's event queue is full: its IN_IGNORED is dropped with the
// rest, and the rescan finds it gone. It is made again and watched all the same.
TEST_F(InotifyTreeTest, ARootDeletedWhileTheQueueOverflowsIsCreatedAgain) {
  StartTree();
  OverflowTheQueue();
  std::filesystem::remove_all(Root());
  ASSERT_TRUE(RunUntil([&] { return !rescans_.empty(); }));
  EXPECT_TRUE(std::filesystem::is_directory(Root()));
  MakeSocketFile(Root() / "late.sock");
  EXPECT_TRUE(RunUntil([&] { return Seen(sockets_, Root() / "late.sock"); }));
}

// A root made again gets the mode a first start gives it, whatever the umask: with umask 000
// it was left world-writable, where any local user could register plugins.
TEST_F(InotifyTreeTest, ARootCreatedAgainGetsTheModeOfAFirstStart) {
  const mode_t umask_before = ::umask(0);
  StartTree();
  EXPECT_EQ(std::filesystem::status(Root()).permissions(), std::filesystem::perms(0755));
  std::filesystem::remove_all(Root());
  const bool seen = RunUntil([&] { return Seen(removed_, Root()); });
  ::umask(umask_before);
  ASSERT_TRUE(seen);
  EXPECT_EQ(std::filesystem::status(Root()).permissions(), std::filesystem::perms(0755));
}

// A root given with a trailing '/' is the same folder: its deletion is reported under its own
// name, which the paths reported under it extend with '/'. Before, the '/' stayed, and the
// removal of ".../plugins_registry/" matched none of the paths under it (a search for what lies
// under it looked for ".../plugins_registry//").
TEST_F(InotifyTreeTest, ARootWithATrailingSlashIsReportedWithout) {
  std::filesystem::create_directories(Root());
  MakeSocketFile(Root() / "a.sock");
  StartTree(Root().string() + "/");
  EXPECT_EQ(sockets_, std::vector<std::string>{(Root() / "a.sock").string()});
  std::filesystem::remove_all(Root());
  ASSERT_TRUE(
      RunUntil([&] { return !removed_.empty() && removed_.back() != (Root() / "a.sock"); }));
  EXPECT_EQ(removed_, (std::vector<std::string>{(Root() / "a.sock").string(), Root().string()}));
}

}  // namespace
}  // namespace devmgr::pluginwatcher
