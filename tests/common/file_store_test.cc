// FileStore: atomic, durable replacement; a failure or a crash at any step leaves the old file
// or the new one, never a mix; names cannot leave the folder.
#include "common/file_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr {
namespace {

using testing::EntriesOf;
using testing::TempDir;
using WriteStep = FileStore::WriteStep;

constexpr WriteStep kAllSteps[] = {WriteStep::kCreateTemp, WriteStep::kWrite,
                                   WriteStep::kSyncFile,   WriteStep::kCloseFile,
                                   WriteStep::kRename,     WriteStep::kSyncFolder};

mode_t ModeOf(const std::filesystem::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0);
  return st.st_mode & 07777;
}

TEST(FileStoreTest, WritesAndReadsBackWithPrivateMode) {
  TempDir dir;
  FileStore store(dir.Sub("device-plugins"));
  ASSERT_TRUE(store.Write("kubelet_internal_checkpoint", "first").ok());
  EXPECT_EQ(ModeOf(dir.Sub("device-plugins")), 0755U);
  EXPECT_EQ(ModeOf(dir.Sub("device-plugins/kubelet_internal_checkpoint")), 0600U);
  ASSERT_TRUE(store.Write("kubelet_internal_checkpoint", "second").ok());
  absl::StatusOr<std::string> read = store.Read("kubelet_internal_checkpoint");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "second");
  EXPECT_EQ(EntriesOf(store.folder()), std::vector<std::string>{"kubelet_internal_checkpoint"});
}

TEST(FileStoreTest, MissingFileIsNotFound) {
  TempDir dir;
  FileStore store(dir.path());
  EXPECT_EQ(store.Read("kubelet_internal_checkpoint").status().code(), absl::StatusCode::kNotFound);
}

TEST(FileStoreTest, RenameKeepsAFileAsideUnderPlainNamesOnly) {
  TempDir dir;
  FileStore store(dir.path());
  ASSERT_TRUE(store.Write("state", "broken").ok());
  ASSERT_TRUE(store.Write("state.corrupt", "older").ok());
  ASSERT_TRUE(store.Rename("state", "state.corrupt").ok());
  EXPECT_EQ(store.Read("state").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*store.Read("state.corrupt"), "broken");
  EXPECT_EQ(store.Rename("state", "other").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.Rename("state.corrupt", "../out").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*store.Read("state.corrupt"), "broken");
}

TEST(FileStoreTest, NamesThatCouldLeaveTheFolderAreRefused) {
  TempDir dir;
  FileStore store(dir.Sub("inner"));
  for (const std::string& name :
       std::vector<std::string>{"", "../escape", "a/b", "/etc/passwd", ".hidden", "trailing.",
                                "sp ace", "..", std::string(251, 'a')}) {
    EXPECT_EQ(store.Write(name, "x").code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(store.Read(name).status().code(), absl::StatusCode::kInvalidArgument) << name;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("escape")));
  EXPECT_TRUE(FileStore::IsValidName(std::string(250, 'a')));
  EXPECT_TRUE(FileStore::IsValidName("kubelet_internal_checkpoint"));
}

TEST(FileStoreTest, ReadDoesNotFollowSymlinks) {
  TempDir dir;
  std::ofstream(dir.Sub("outside")) << "secret";
  std::filesystem::create_directory(dir.Sub("store"));
  std::filesystem::create_symlink(dir.Sub("outside"), dir.Sub("store/kubelet_internal_checkpoint"));
  FileStore store(dir.Sub("store"));
  EXPECT_EQ(store.Read("kubelet_internal_checkpoint").status().code(),
            absl::StatusCode::kFailedPrecondition);
  // Writing replaces the link itself; the file it pointed to is untouched.
  ASSERT_TRUE(store.Write("kubelet_internal_checkpoint", "new").ok());
  EXPECT_EQ(*ReadWholeFile(dir.Sub("outside")), "secret");
  EXPECT_EQ(*store.Read("kubelet_internal_checkpoint"), "new");
}

TEST(FileStoreTest, ListSkipsDotFilesAndIncludesEverythingElse) {
  TempDir dir;
  FileStore store(dir.path());
  EXPECT_TRUE(store.List()->empty());
  std::ofstream(dir.Sub(".hidden")) << "";
  EXPECT_TRUE(store.List()->empty());
  ASSERT_TRUE(store.Write("b", "x").ok());
  std::filesystem::create_directory(dir.Sub("a-dir"));
  EXPECT_EQ(*store.List(), (std::vector<std::string>{"a-dir", "b"}));
  EXPECT_EQ(FileStore(dir.Sub("missing")).List().status().code(), absl::StatusCode::kNotFound);
}

TEST(FileStoreTest, ReadWholeFileRefusesWhatIsTooLargeOrNotAFile) {
  TempDir dir;
  std::ofstream(dir.Sub("big")) << std::string(100, 'x');
  EXPECT_EQ(ReadWholeFile(dir.Sub("big"), true, 99).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ReadWholeFile(dir.Sub("big"), true, 100)->size(), 100U);
  EXPECT_EQ(ReadWholeFile(dir.path()).status().code(), absl::StatusCode::kFailedPrecondition);

  // A FIFO where a state file goes (a plugin that can write the folder put it there) is refused
  // at once: opening it for reading must not wait for a writer.
  ASSERT_EQ(::mkfifo(dir.Sub("fifo").c_str(), 0600), 0);
  auto read = std::async(std::launch::async, [&] { return ReadWholeFile(dir.Sub("fifo")); });
  if (read.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "the open of a FIFO waits for a writer";
    std::ofstream(dir.Sub("fifo")) << "";  // lets it go
  }
  EXPECT_EQ(read.get().status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(FileStoreTest, AFailedStepLeavesTheOldFileAndNoTemporaryFile) {
  for (WriteStep failing : kAllSteps) {
    TempDir dir;
    FileStore good(dir.path());
    ASSERT_TRUE(good.Write("cp", "old").ok());
    FileStore faulty(dir.path(), [failing](WriteStep step) {
      return step == failing ? absl::UnavailableError("injected") : absl::OkStatus();
    });
    EXPECT_EQ(faulty.Write("cp", "new").code(), absl::StatusCode::kUnavailable);
    // Only a failure after the rename (the folder fsync) can leave the new content in place.
    const std::string expected = failing == WriteStep::kSyncFolder ? "new" : "old";
    EXPECT_EQ(*good.Read("cp"), expected) << static_cast<int>(failing);
    EXPECT_EQ(EntriesOf(dir.path()), std::vector<std::string>{"cp"}) << static_cast<int>(failing);
  }
}

// A process killed at any step of a write leaves the old file or the new one, whole.
TEST(FileStoreTest, ACrashAtAnyStepLeavesTheOldOrTheNewFile) {
  const std::string old_content(64 * 1024, 'o');
  const std::string new_content(96 * 1024, 'n');
  for (WriteStep crash_at : kAllSteps) {
    TempDir dir;
    ASSERT_TRUE(FileStore(dir.path()).Write("cp", old_content).ok());
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      FileStore dying(dir.path(), [crash_at](WriteStep step) {
        if (step == crash_at) ::_exit(0);
        return absl::OkStatus();
      });
      (void)dying.Write("cp", new_content);
      ::_exit(1);  // the crash point was never reached
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0) << "crash point not reached";
    absl::StatusOr<std::string> left = FileStore(dir.path()).Read("cp");
    ASSERT_TRUE(left.ok());
    const bool after_rename = crash_at == WriteStep::kSyncFolder;
    EXPECT_EQ(*left, after_rename ? new_content : old_content) << static_cast<int>(crash_at);
    // A crash may leave a temporary file, but never under a name List reports, and the next
    // start's RemoveTemporaries takes it away.
    EXPECT_EQ(*FileStore(dir.path()).List(), std::vector<std::string>{"cp"});
    const size_t left_behind = EntriesOf(dir.path()).size() - 1;
    EXPECT_EQ(*FileStore(dir.path()).RemoveTemporaries(), left_behind)
        << static_cast<int>(crash_at);
    EXPECT_EQ(EntriesOf(dir.path()), std::vector<std::string>{"cp"}) << static_cast<int>(crash_at);
  }
}

// RemoveTemporaries takes only what FileStore's own writes leave: a regular file named as
// mkstemp fills in ".NAME.tmp-XXXXXX". The kubelet's temporaries (".<digits>"), names of another
// shape, a folder and a symlink stay, and so does what the symlink points to.
TEST(FileStoreTest, RemoveTemporariesRemovesWhatInterruptedWritesLeftAndNothingElse) {
  TempDir dir;
  const FileStore store(dir.Sub("store"));
  EXPECT_EQ(*store.RemoveTemporaries(), 0u) << "a missing folder holds none";
  ASSERT_TRUE(store.Write("kubelet_internal_checkpoint", "c").ok());
  const std::vector<std::string> ours = {".kubelet_internal_checkpoint.tmp-aB3xYz",
                                         ".dra_manager_state.tmp-000000"};
  const std::vector<std::string> others = {
      ".123456789",     ".cp.tmp-12345",    ".cp.tmp-1234567",
      ".cp.tmp-12_456", "cp.tmp-abcdef",    ".-cp.tmp-abcdef",
      ".tmp-abcdef",    ".cp.tmp-abcdef.x", "kubelet_internal_checkpoint"};
  for (const std::string& name : ours) {
    std::ofstream(dir.Sub("store") / name) << "left";
  }
  for (const std::string& name : others) {
    if (name != "kubelet_internal_checkpoint") std::ofstream(dir.Sub("store") / name) << "other";
  }
  std::filesystem::create_directory(dir.Sub("store") / ".folder.tmp-abcdef");
  std::filesystem::create_symlink(dir.Sub("store") / ".dra_manager_state.tmp-000000",
                                  dir.Sub("store") / ".link.tmp-abcdef");
  std::filesystem::create_symlink(dir.Sub("store") / "cp.tmp-abcdef",
                                  dir.Sub("store") / ".link2.tmp-abcdef");

  EXPECT_EQ(*store.RemoveTemporaries(), ours.size());
  std::vector<std::string> expected = others;
  expected.push_back(".folder.tmp-abcdef");
  expected.push_back(".link.tmp-abcdef");
  expected.push_back(".link2.tmp-abcdef");
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(EntriesOf(dir.Sub("store")), expected);
  EXPECT_EQ(*store.Read("kubelet_internal_checkpoint"), "c");
  EXPECT_EQ(*store.RemoveTemporaries(), 0u);
}

// Every valid name can be written, the longest (250 characters, the kubelet's limit) too: the
// temporary file's name, which embeds it, is cut to fit the 255 bytes of a file name, and what
// an interrupted write of one leaves is still recognised. Before, names of 244 to 250 characters
// passed IsValidName and failed every write with "File name too long".
TEST(FileStoreTest, NamesUpToTheLongestValidOneCanBeWritten) {
  TempDir dir;
  const FileStore store(dir.path());
  for (size_t length = 240; length <= 250; ++length) {
    const std::string name = std::string(length - 1, 'n') + std::to_string(length % 10);
    ASSERT_TRUE(FileStore::IsValidName(name));
    const absl::Status written = store.Write(name, "bytes");
    ASSERT_TRUE(written.ok()) << length << ": " << written;
    EXPECT_EQ(*store.Read(name), "bytes");
  }
  // Cut after a '-', the name in the temporary one still ends with a letter or digit: a write
  // killed before its rename leaves a temporary file that RemoveTemporaries takes.
  const std::string name = std::string(242, 'a') + "-" + std::string(7, 'b');
  ASSERT_TRUE(store.Write(name, "bytes").ok());
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    FileStore dying(dir.path(), [](WriteStep step) {
      if (step == WriteStep::kRename) ::_exit(0);
      return absl::OkStatus();
    });
    (void)dying.Write(name, "new bytes");
    ::_exit(1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "crash point not reached";
  EXPECT_EQ(*store.RemoveTemporaries(), 1u);
  EXPECT_EQ(*store.Read(name), "bytes");
}

// A file larger than a read takes (kMaxFileBytes) is not written: the old one stays. Before, it
// was written, and the next start could not read it back.
TEST(FileStoreTest, AFileTooLargeToReadBackIsNotWritten) {
  TempDir dir;
  const FileStore store(dir.path());
  ASSERT_TRUE(store.Write("cp", "old").ok());
  const std::string huge(kMaxFileBytes + 1, 'x');
  const absl::Status written = store.Write("cp", huge);
  EXPECT_EQ(written.code(), absl::StatusCode::kResourceExhausted) << written;
  EXPECT_EQ(*store.Read("cp"), "old");
  EXPECT_EQ(EntriesOf(dir.path()), std::vector<std::string>{"cp"});
}

TEST(FileStoreTest, WriteTogetherReplacesEveryFileAndLeavesNoTemporaryFile) {
  TempDir dir;
  const FileStore store(dir.path());
  ASSERT_TRUE(store.Write("a", "old a").ok());
  ASSERT_TRUE(store.WriteTogether({{"a", "new a"}, {"b", "new b"}}).ok());
  EXPECT_EQ(*store.Read("a"), "new a");
  EXPECT_EQ(*store.Read("b"), "new b");
  EXPECT_EQ(EntriesOf(dir.path()), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ModeOf(dir.path() / "b"), 0600);
  // One bad name refuses the whole write.
  EXPECT_EQ(store.WriteTogether({{"a", "x"}, {"../b", "x"}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*store.Read("a"), "new a");
}

// A failure at the n-th step of a two-file write, for every n: before the first rename nothing
// changes; from then on, the files renamed before the failing step are new, the others old; no
// temporary file is left in any case.
TEST(FileStoreTest, AFailedStepOfWriteTogetherLeavesEachFileOldOrNewInOrder) {
  int steps = 0;
  {
    TempDir dir;
    const FileStore counting(dir.path(), [&steps](WriteStep) {
      ++steps;
      return absl::OkStatus();
    });
    ASSERT_TRUE(counting.WriteTogether({{"a", "a1"}, {"b", "b1"}}).ok());
  }
  ASSERT_EQ(steps, 11);  // five per file, the folder's sync once
  for (int failing = 1; failing <= steps; ++failing) {
    TempDir dir;
    const FileStore good(dir.path());
    ASSERT_TRUE(good.WriteTogether({{"a", "a0"}, {"b", "b0"}}).ok());
    int step = 0;
    int renames_before = 0;
    const FileStore faulty(dir.path(), [&](WriteStep kind) {
      if (++step == failing) return absl::UnavailableError("injected");
      if (kind == WriteStep::kRename) ++renames_before;
      return absl::OkStatus();
    });
    EXPECT_EQ(faulty.WriteTogether({{"a", "a1"}, {"b", "b1"}}).code(),
              absl::StatusCode::kUnavailable)
        << failing;
    EXPECT_EQ(*good.Read("a"), renames_before >= 1 ? "a1" : "a0") << failing;
    EXPECT_EQ(*good.Read("b"), renames_before >= 2 ? "b1" : "b0") << failing;
    EXPECT_EQ(EntriesOf(dir.path()), (std::vector<std::string>{"a", "b"})) << failing;
  }
}

// WriteAcross: files of two folders in one write. Each store's hook sees the steps of its own
// files and the sync of its own folder, each folder synced once after every rename; a failure
// after the first rename leaves the files renamed before it new, in whichever folder.
TEST(FileStoreTest, WriteAcrossWritesTheFilesOfSeveralFoldersAndSyncsEachFolderOnce) {
  TempDir dir;
  std::vector<std::string> steps;
  auto recording = [&steps](const char* folder) {
    return [&steps, folder](WriteStep step) {
      steps.push_back(absl::StrCat(folder, ":", static_cast<int>(step)));
      return absl::OkStatus();
    };
  };
  const FileStore root(dir.path(), recording("root"));
  const FileStore plugins(dir.Sub("plugins"), recording("plugins"));
  ASSERT_TRUE(FileStore::WriteAcross(
                  {{&root, "state", "s1"}, {&plugins, "cp", "c1"}, {&plugins, "record", "r1"}})
                  .ok());
  EXPECT_EQ(*root.Read("state"), "s1");
  EXPECT_EQ(*plugins.Read("cp"), "c1");
  EXPECT_EQ(*plugins.Read("record"), "r1");
  EXPECT_EQ(EntriesOf(dir.Sub("plugins")), (std::vector<std::string>{"cp", "record"}));
  // kCreateTemp=0, kWrite=1 per file; kSyncFile=2, kCloseFile=3 per file; kRename=4 per file;
  // kSyncFolder=5 per folder.
  EXPECT_EQ(steps, (std::vector<std::string>{
                       "root:0", "root:1", "plugins:0", "plugins:1", "plugins:0", "plugins:1",
                       "root:2", "root:3", "plugins:2", "plugins:3", "plugins:2", "plugins:3",
                       "root:4", "plugins:4", "plugins:4", "root:5", "plugins:5"}));

  const FileStore failing_rename(dir.Sub("plugins"), [](WriteStep step) {
    return step == WriteStep::kRename ? absl::UnavailableError("injected") : absl::OkStatus();
  });
  EXPECT_EQ(FileStore::WriteAcross({{&root, "state", "s2"}, {&failing_rename, "cp", "c2"}}).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(*root.Read("state"), "s2") << "renamed before the failing step";
  EXPECT_EQ(*plugins.Read("cp"), "c1");
  EXPECT_EQ(EntriesOf(dir.Sub("plugins")), (std::vector<std::string>{"cp", "record"}))
      << "no temporary file left";
}

// WriteAcrossCommitted: the temporary files are written before the commit, the files replaced
// after it; an existing file is replaced by exchanging names (its old bytes then removed), a
// missing one created, and a reader that opened the old file keeps reading the old bytes.
TEST(FileStoreTest, WriteAcrossCommittedReplacesTheFilesOnlyAfterTheCommit) {
  TempDir dir;
  const FileStore root(dir.path());
  const FileStore plugins(dir.Sub("plugins"));
  ASSERT_TRUE(plugins.Write("cp", "c1").ok());
  std::ifstream old_reader(dir.Sub("plugins") / "cp");
  std::vector<std::string> seen_at_commit;
  ASSERT_TRUE(
      FileStore::WriteAcrossCommitted({{&plugins, "cp", "c2"}, {&root, "state", "s1"}}, [&] {
        seen_at_commit = EntriesOf(dir.Sub("plugins"));
        EXPECT_EQ(*plugins.Read("cp"), "c1");
        EXPECT_EQ(root.Read("state").status().code(), absl::StatusCode::kNotFound);
        return absl::OkStatus();
      }).ok());
  ASSERT_EQ(seen_at_commit.size(), 2u);
  EXPECT_EQ(seen_at_commit[1], "cp");
  EXPECT_TRUE(seen_at_commit[0].starts_with(".cp.tmp-")) << seen_at_commit[0];
  EXPECT_EQ(*plugins.Read("cp"), "c2");
  EXPECT_EQ(*root.Read("state"), "s1");
  EXPECT_EQ(ModeOf(dir.Sub("plugins") / "cp"), 0600u);
  std::string old_bytes;
  std::getline(old_reader, old_bytes);
  EXPECT_EQ(old_bytes, "c1");
  EXPECT_EQ(EntriesOf(dir.Sub("plugins")), std::vector<std::string>{"cp"}) << "old bytes removed";
  EXPECT_EQ(EntriesOf(dir.path()), (std::vector<std::string>{"plugins", "state"}));

  // A failed commit changes nothing and leaves no temporary file.
  EXPECT_EQ(FileStore::WriteAcrossCommitted({{&plugins, "cp", "c3"}},
                                            [] { return absl::UnavailableError("no flush"); })
                .code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(*plugins.Read("cp"), "c2");
  EXPECT_EQ(EntriesOf(dir.Sub("plugins")), std::vector<std::string>{"cp"});
}

// What is not a regular file at a name gets a plain rename's answer: a symlink is replaced (its
// target untouched), a folder refuses the write and stays where it is.
TEST(FileStoreTest, WriteAcrossCommittedTreatsWhatIsNotAFileAsARenameWould) {
  TempDir dir;
  const FileStore store(dir.Sub("store"));
  ASSERT_TRUE(store.Write("target", "t").ok());
  std::filesystem::create_symlink(dir.Sub("store") / "target", dir.Sub("store") / "link");
  auto commit = [] { return absl::OkStatus(); };
  ASSERT_TRUE(FileStore::WriteAcrossCommitted({{&store, "link", "l"}}, commit).ok());
  EXPECT_FALSE(std::filesystem::is_symlink(dir.Sub("store") / "link"));
  EXPECT_EQ(*store.Read("link"), "l");
  EXPECT_EQ(*store.Read("target"), "t");

  std::filesystem::create_directory(dir.Sub("store") / "folder");
  EXPECT_FALSE(FileStore::WriteAcrossCommitted({{&store, "folder", "f"}}, commit).ok());
  EXPECT_TRUE(std::filesystem::is_directory(dir.Sub("store") / "folder"));
  EXPECT_EQ(EntriesOf(dir.Sub("store")), (std::vector<std::string>{"folder", "link", "target"}));
}

}  // namespace
}  // namespace devmgr
