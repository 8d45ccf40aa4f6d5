// StateJournal: a commit is durable with the journal's one flush; what a kill or a lost rename
// leaves behind the journal is restored at Open, and only that: a torn record, a record of an
// earlier epoch or a file outside the journal's folders is not.
#include "common/state_journal.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/crc32.h"
#include "common/file_store.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr {
namespace {

using testing::EntriesOf;
using testing::TempDir;
using testing::WaitFor;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteByHand(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// WriteAsLost leaves a file as a power cut leaves one whose rename did not reach the disk: older
// bytes, modified before the journal's records.
void WriteAsLost(const std::filesystem::path& path, const std::string& bytes) {
  WriteByHand(path, bytes);
  std::filesystem::last_write_time(path,
                                   std::filesystem::last_write_time(path) - std::chrono::hours(1));
}

// A journal of two folders, "state" and "plugins", in a temporary folder.
class StateJournalTest : public ::testing::Test {
 protected:
  StateJournalTest() : state_(dir_.Sub("state")), plugins_(dir_.Sub("plugins")) {
    std::filesystem::create_directories(state_.folder());
    std::filesystem::create_directories(plugins_.folder());
  }

  StateJournal::Options Options() const {
    StateJournal::Options options;
    options.path = dir_.Sub("state/journal");
    options.folders = {state_.folder(), plugins_.folder()};
    options.idle_compaction = absl::ZeroDuration();
    return options;
  }

  std::unique_ptr<StateJournal> Open(StateJournal::Options options) const {
    absl::StatusOr<std::unique_ptr<StateJournal>> journal = StateJournal::Open(std::move(options));
    EXPECT_TRUE(journal.ok()) << journal.status();
    return journal.ok() ? *std::move(journal) : nullptr;
  }

  // InChild runs `work` in a child process that then ends as a kill would end it.
  static void InChild(const std::function<void()>& work) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      work();
      ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0) << "a step in the child failed";
  }
  // OpenInChild opens a journal in the child that nothing destroys (a compaction would make
  // the files durable); the child ends when that fails.
  static StateJournal* OpenInChild(StateJournal::Options options) {
    absl::StatusOr<std::unique_ptr<StateJournal>> journal = StateJournal::Open(std::move(options));
    if (!journal.ok()) ::_exit(6);
    return journal->release();
  }
  // Must ends the child with an error when `status` is not OK.
  static void Must(const absl::Status& status) {
    if (!status.ok()) ::_exit(2);
  }

  TempDir dir_;
  const FileStore state_;
  const FileStore plugins_;
};

TEST_F(StateJournalTest, ACommitReplacesItsFilesInTheirFolders) {
  std::unique_ptr<StateJournal> journal = Open(Options());
  ASSERT_NE(journal, nullptr);
  ASSERT_TRUE(
      journal->WriteTogether({{&plugins_, "checkpoint", "c1"}, {&state_, "record", "r1"}}).ok());
  ASSERT_TRUE(journal->WriteTogether({{&plugins_, "checkpoint", "c2"}}).ok());
  EXPECT_EQ(*plugins_.Read("checkpoint"), "c2");
  EXPECT_EQ(*state_.Read("record"), "r1");
  // No temporary file is left, and the journal is not a name FileStore::List reports there.
  EXPECT_EQ(*plugins_.List(), std::vector<std::string>{"checkpoint"});
  struct stat st {};
  ASSERT_EQ(::stat(Options().path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_GE(static_cast<size_t>(st.st_size), Options().initial_capacity);
}

// Killed after the journal's flush and before the renames: the files are restored at Open, and
// the temporary files the commit left are removed.
TEST_F(StateJournalTest, ACommitKilledBeforeItsRenamesIsRestoredAtOpen) {
  ASSERT_TRUE(plugins_.Write("checkpoint", "old").ok());
  InChild([&] {
    StateJournal* journal = OpenInChild(Options());
    const FileStore dying(plugins_.folder(), [](FileStore::WriteStep step) {
      if (step == FileStore::WriteStep::kRename) ::_exit(0);
      return absl::OkStatus();
    });
    Must(journal->WriteTogether({{&dying, "checkpoint", "new"}, {&state_, "record", "r"}}));
    ::_exit(3);  // the kill point was never reached
  });
  EXPECT_EQ(*plugins_.Read("checkpoint"), "old");
  EXPECT_EQ(state_.Read("record").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(EntriesOf(plugins_.folder()).size(), 2u) << "the checkpoint and its temporary file";
  std::unique_ptr<StateJournal> journal = Open(Options());
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(journal->replayed(), 2u);
  EXPECT_EQ(*plugins_.Read("checkpoint"), "new");
  EXPECT_EQ(*state_.Read("record"), "r");
  EXPECT_EQ(EntriesOf(plugins_.folder()), std::vector<std::string>{"checkpoint"});
  EXPECT_EQ(EntriesOf(state_.folder()), (std::vector<std::string>{"journal", "record"}));
}

// The renamed files lost (a power cut before the kernel wrote them back): each file gets the
// bytes of the last record that named it.
TEST_F(StateJournalTest, EachFileGetsItsLatestRecordedBytes) {
  InChild([&] {
    StateJournal* journal = OpenInChild(Options());
    Must(journal->WriteTogether({{&plugins_, "checkpoint", "c1"}, {&state_, "record", "r1"}}));
    Must(journal->WriteTogether({{&plugins_, "checkpoint", "c2"}}));
  });
  WriteAsLost(plugins_.folder() / "checkpoint", "lost");
  WriteAsLost(state_.folder() / "record", "lost");
  std::unique_ptr<StateJournal> journal = Open(Options());
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(*plugins_.Read("checkpoint"), "c2");
  EXPECT_EQ(*state_.Read("record"), "r1");
  // Open started a new epoch: the records are not replayed again over later writes.
  journal.reset();
  WriteAsLost(plugins_.folder() / "checkpoint", "later");
  journal = Open(Options());
  EXPECT_EQ(journal->replayed(), 0u);
  EXPECT_EQ(*plugins_.Read("checkpoint"), "later");
}

TEST_F(StateJournalTest, ATornRecordEndsTheReplay) {
  InChild([&] {
    StateJournal* journal = OpenInChild(Options());
    Must(journal->WriteTogether({{&plugins_, "checkpoint", "first-commit"}}));
    Must(journal->WriteTogether({{&plugins_, "checkpoint", "second-commit"}}));
    Must(journal->WriteTogether({{&plugins_, "checkpoint", "third-commit"}}));
  });
  // One byte of the second record changed: it and what follows it are not replayed.
  std::string bytes = ReadFile(Options().path);
  const size_t at = bytes.find("second-commit");
  ASSERT_NE(at, std::string::npos);
  bytes[at] = 'S';
  WriteByHand(Options().path, bytes);
  WriteAsLost(plugins_.folder() / "checkpoint", "lost");
  std::unique_ptr<StateJournal> journal = Open(Options());
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(*plugins_.Read("checkpoint"), "first-commit");
}

// After a compaction the files are durable themselves; the records written before it are not
// replayed, even where later records have not overwritten them.
TEST_F(StateJournalTest, RecordsBeforeACompactionAreNotReplayed) {
  const std::string large(8000, 'L');
  InChild([&] {
    StateJournal* journal = OpenInChild(Options());
    Must(journal->WriteTogether({{&plugins_, "checkpoint", large}, {&state_, "record", "r1"}}));
    Must(journal->Compact());
    Must(journal->WriteTogether({{&plugins_, "checkpoint", "small"}}));
  });
  // Its end, which the later record did not overwrite.
  ASSERT_NE(ReadFile(Options().path).find(large.substr(4000)), std::string::npos)
      << "the earlier record is still in the journal's space";
  WriteAsLost(plugins_.folder() / "checkpoint", "lost");
  WriteAsLost(state_.folder() / "record", "by hand");
  std::unique_ptr<StateJournal> journal = Open(Options());
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(journal->replayed(), 1u);
  EXPECT_EQ(*plugins_.Read("checkpoint"), "small");
  EXPECT_EQ(*state_.Read("record"), "by hand");
}

// A file modified after the journal's last record of it was written by another program after
// devmgr stopped (a kubelet on the same root): it is left as it is; the others are restored.
TEST_F(StateJournalTest, AFileWrittenAfterItsLastRecordIsLeftAsItIs) {
  InChild([&] {
    StateJournal* journal = OpenInChild(Options());
    Must(journal->WriteTogether({{&plugins_, "checkpoint", "c1"}, {&state_, "record", "r1"}}));
  });
  // Written a while after the record, as by a program started after devmgr ended (the file
  // clock's granularity would blur a write made at once).
  WriteByHand(plugins_.folder() / "checkpoint", "a kubelet's");
  std::filesystem::last_write_time(
      plugins_.folder() / "checkpoint",
      std::filesystem::last_write_time(plugins_.folder() / "checkpoint") + std::chrono::seconds(5));
  WriteAsLost(state_.folder() / "record", "lost");
  std::unique_ptr<StateJournal> journal = Open(Options());
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(journal->replayed(), 1u);
  EXPECT_EQ(*plugins_.Read("checkpoint"), "a kubelet's");
  EXPECT_EQ(*state_.Read("record"), "r1");
}

TEST_F(StateJournalTest, AFullJournalCompactsAndGrows) {
  StateJournal::Options options = Options();
  options.initial_capacity = 16 * 1024;
  const std::string content(5000, 'x');
  InChild([&] {
    StateJournal* journal = OpenInChild(options);
    for (int i = 0; i < 10; ++i) {
      Must(journal->WriteTogether({{&plugins_, "checkpoint", content + std::to_string(i)}}));
    }
    if (journal->compactions() == 0) ::_exit(4);
  });
  struct stat st {};
  ASSERT_EQ(::stat(options.path.c_str(), &st), 0);
  EXPECT_GE(static_cast<size_t>(st.st_size), StateJournal::kRecordsKept * content.size());
  WriteAsLost(plugins_.folder() / "checkpoint", "lost");
  std::unique_ptr<StateJournal> journal = Open(options);
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(*plugins_.Read("checkpoint"), content + "9");
}

// A disk without room for kRecordsKept records of the largest size: the journal goes on in the
// room it has; a grow that does not fit writes nothing (its blocks are reserved first) and
// gives back what it took. A record too large for the room the disk has fails alone.
// RLIMIT_FSIZE stands in for the full disk (writes past it fail with EFBIG). Before, the grow's
// zeros stayed, filling the disk, and every compaction after a failed record tried to make room
// for it again: every commit failed; and then a grow wrote zeros up to the limit before it was
// refused.
TEST_F(StateJournalTest, AJournalWithoutRoomToGrowGoesOnInTheRoomItHas) {
  StateJournal::Options options = Options();
  options.initial_capacity = 16 * 1024;
  const size_t limit = 4096 + 40 * 1024;  // the header, and 40 KiB of records
  InChild([&] {
    // Each refusal (SIGXFSZ) notes the journal's size: a grow that cannot have its room writes
    // none of it first, which on a full disk would take the last free space from every other
    // writer until the grow is given back.
    static std::string journal_path;
    static volatile sig_atomic_t refusals = 0;
    static volatile sig_atomic_t largest_at_refusal = 0;
    journal_path = options.path.string();
    struct sigaction noted {};
    noted.sa_handler = [](int) {
      refusals = refusals + 1;
      struct stat at {};
      if (::stat(journal_path.c_str(), &at) == 0 && at.st_size > largest_at_refusal) {
        largest_at_refusal = static_cast<sig_atomic_t>(at.st_size);
      }
    };
    if (::sigaction(SIGXFSZ, &noted, nullptr) != 0) ::_exit(3);
    const rlimit fsize{.rlim_cur = limit, .rlim_max = limit};
    if (::setrlimit(RLIMIT_FSIZE, &fsize) != 0) ::_exit(3);
    StateJournal* journal = OpenInChild(options);
    const std::string content(10 * 1024, 'x');
    for (int i = 0; i < 10; ++i) {
      Must(journal->WriteTogether({{&plugins_, "checkpoint", content + std::to_string(i)}}));
    }
    if (journal->compactions() == 0) ::_exit(4);
    // Its file fits (40 KiB), its record (with its header, in whole pages) does not.
    if (journal->WriteTogether({{&state_, "big", std::string(40 * 1024, 'y')}}).ok()) ::_exit(5);
    for (int i = 10; i < 20; ++i) {
      Must(journal->WriteTogether({{&plugins_, "checkpoint", content + std::to_string(i)}}));
    }
    if (refusals == 0) ::_exit(7);  // no grow was refused: nothing was tested
    if (static_cast<size_t>(largest_at_refusal) >= limit) ::_exit(8);
  });
  struct stat st {};
  ASSERT_EQ(::stat(options.path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), 4096 + options.initial_capacity)
      << "the space of the failed grows was given back";
  WriteAsLost(plugins_.folder() / "checkpoint", "lost");
  std::unique_ptr<StateJournal> journal = Open(options);
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(*plugins_.Read("checkpoint"), std::string(10 * 1024, 'x') + "19");
  EXPECT_FALSE(std::filesystem::exists(state_.folder() / "big"));
}

// JournalBytes: the journal file's size, its header page included.
size_t JournalBytes(const std::filesystem::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
}

// A node that held many pods and then few: once its files shrink, a compaction gives back the
// space their large records needed, down to the initial capacity; it grows again when they do,
// and what was committed around the cut is replayed. Before, the journal kept the largest
// space it had ever grown to.
TEST_F(StateJournalTest, AJournalShrinksOnceItsFilesDo) {
  StateJournal::Options options = Options();
  options.initial_capacity = 16 * 1024;
  const std::string large(20 * 1024, 'x');
  std::unique_ptr<StateJournal> journal = Open(options);
  ASSERT_NE(journal, nullptr);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        journal->WriteTogether({{&plugins_, "checkpoint", large + std::to_string(i)}}).ok());
  }
  ASSERT_TRUE(journal->Compact().ok());
  const size_t grown = JournalBytes(options.path);
  EXPECT_GE(grown, 4096 + StateJournal::kRecordsKept * large.size());

  ASSERT_TRUE(journal->WriteTogether({{&plugins_, "checkpoint", "small"}}).ok());
  ASSERT_TRUE(journal->Compact().ok());
  EXPECT_EQ(JournalBytes(options.path), 4096 + options.initial_capacity);

  // A large file again, committed in the space cut and lost as a power cut loses a rename:
  // replayed.
  journal.reset();
  InChild([&] {
    StateJournal* child = OpenInChild(options);
    Must(child->WriteTogether({{&plugins_, "checkpoint", large + "again"}}));
  });
  WriteAsLost(plugins_.folder() / "checkpoint", "lost");
  journal = Open(options);
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(*plugins_.Read("checkpoint"), large + "again");
  ASSERT_TRUE(journal->WriteTogether({{&plugins_, "checkpoint", large + "grows"}}).ok());
  ASSERT_TRUE(journal->Compact().ok());
  EXPECT_GE(JournalBytes(options.path), 4096 + StateJournal::kRecordsKept * large.size());
}

// The room kept counts every file at its latest size, not only those committed since the last
// compaction: a pause in which only a small file changed does not cut the room a large one
// needs, nor does the first compaction after a start, which finds the large file on disk.
// Otherwise the next commit of the large file would grow the journal again, writing its space
// in the middle of an admission.
TEST_F(StateJournalTest, ASmallCommitKeepsTheRoomALargeFileNeeds) {
  StateJournal::Options options = Options();
  options.initial_capacity = 16 * 1024;
  const std::string large(20 * 1024, 'x');
  const size_t room = 4096 + StateJournal::kRecordsKept * large.size();
  std::unique_ptr<StateJournal> journal = Open(options);
  ASSERT_NE(journal, nullptr);
  ASSERT_TRUE(journal->WriteTogether({{&plugins_, "checkpoint", large}}).ok());
  ASSERT_TRUE(journal->Compact().ok());
  ASSERT_GE(JournalBytes(options.path), room);

  ASSERT_TRUE(journal->WriteTogether({{&state_, "record", "small"}}).ok());
  ASSERT_TRUE(journal->Compact().ok());
  EXPECT_GE(JournalBytes(options.path), room);

  journal.reset();
  journal = Open(options);
  ASSERT_NE(journal, nullptr);
  ASSERT_TRUE(journal->WriteTogether({{&state_, "record", "smaller"}}).ok());
  ASSERT_TRUE(journal->Compact().ok());
  EXPECT_GE(JournalBytes(options.path), room);
}

// A damaged copy kept for a human (".corrupt") is never written through the journal: it holds
// no room, however large.
TEST_F(StateJournalTest, ADamagedCopyHoldsNoRoom) {
  StateJournal::Options options = Options();
  options.initial_capacity = 16 * 1024;
  std::unique_ptr<StateJournal> journal = Open(options);
  ASSERT_NE(journal, nullptr);
  ASSERT_TRUE(
      journal->WriteTogether({{&plugins_, "checkpoint", std::string(20 * 1024, 'x')}}).ok());
  ASSERT_TRUE(journal->Compact().ok());
  ASSERT_GE(JournalBytes(options.path), 4096 + StateJournal::kRecordsKept * 20 * 1024);
  journal.reset();
  std::filesystem::rename(plugins_.folder() / "checkpoint",
                          plugins_.folder() / "checkpoint.corrupt");
  journal = Open(options);
  ASSERT_NE(journal, nullptr);
  ASSERT_TRUE(journal->WriteTogether({{&plugins_, "checkpoint", "small"}}).ok());
  ASSERT_TRUE(journal->Compact().ok());
  EXPECT_EQ(JournalBytes(options.path), 4096 + options.initial_capacity);
}

TEST_F(StateJournalTest, CommitsCompactOnceTheyPause) {
  StateJournal::Options options = Options();
  options.idle_compaction = absl::Milliseconds(20);
  std::unique_ptr<StateJournal> journal = Open(options);
  ASSERT_NE(journal, nullptr);
  ASSERT_TRUE(journal->WriteTogether({{&plugins_, "checkpoint", "c1"}}).ok());
  EXPECT_TRUE(WaitFor([&] { return journal->compactions() == 1; }));
  // Nothing more to compact: no second one.
  ASSERT_TRUE(journal->Compact().ok());
  EXPECT_EQ(journal->compactions(), 1u);
}

// Commits that never pause still compact once the oldest not compacted is the longest delay
// old (here the idle time, the longer of the two): the files a kubelet would read after a power
// cut are not left behind for as long as the node is busy. Before, only a pause (or a full
// journal) compacted.
TEST_F(StateJournalTest, SteadyCommitsCompactAfterTheLongestDelay) {
  StateJournal::Options options = Options();
  options.idle_compaction = absl::Milliseconds(200);  // commits every few ms never pause so long
  options.max_compaction_delay = absl::Milliseconds(50);
  std::unique_ptr<StateJournal> journal = Open(options);
  ASSERT_NE(journal, nullptr);
  int commits = 0;
  EXPECT_TRUE(WaitFor([&] {
    EXPECT_TRUE(
        journal->WriteTogether({{&plugins_, "checkpoint", absl::StrCat("c", ++commits)}}).ok());
    return journal->compactions() >= 1;
  }));
}

TEST_F(StateJournalTest, ClosingCompacts) {
  std::unique_ptr<StateJournal> journal = Open(Options());
  ASSERT_NE(journal, nullptr);
  ASSERT_TRUE(journal->WriteTogether({{&plugins_, "checkpoint", "c1"}}).ok());
  journal.reset();
  WriteAsLost(plugins_.folder() / "checkpoint", "by hand");
  journal = Open(Options());
  EXPECT_EQ(journal->replayed(), 0u);
  EXPECT_EQ(*plugins_.Read("checkpoint"), "by hand");
}

TEST_F(StateJournalTest, FilesOutsideItsFoldersAreNeitherWrittenNorRestored) {
  const FileStore elsewhere(dir_.Sub("elsewhere"));
  std::unique_ptr<StateJournal> journal = Open(Options());
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(journal->WriteTogether({{&plugins_, "checkpoint", "c"}, {&elsewhere, "f", "x"}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(plugins_.Read("checkpoint").status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(elsewhere.folder()));
  journal.reset();

  // A journal written with the plugins folder among its folders, opened without it.
  InChild([&] {
    StateJournal* dying = OpenInChild(Options());
    Must(dying->WriteTogether({{&plugins_, "checkpoint", "c"}, {&state_, "record", "r"}}));
  });
  std::filesystem::remove(plugins_.folder() / "checkpoint");
  std::filesystem::remove(state_.folder() / "record");
  StateJournal::Options narrower = Options();
  narrower.folders = {state_.folder()};
  journal = Open(narrower);
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(journal->replayed(), 1u);
  EXPECT_EQ(*state_.Read("record"), "r");
  EXPECT_FALSE(std::filesystem::exists(plugins_.folder() / "checkpoint"));
}

// A record whose file name no write gives (one a hand made, with its CRC right) is not
// restored: before, ".." or ".hidden" failed the start with "invalid file name", which named
// neither the journal nor the record.
TEST_F(StateJournalTest, ARecordNamingNoStateFileIsNotRestored) {
  InChild([&] {
    StateJournal* dying = OpenInChild(Options());
    Must(dying->WriteTogether({{&plugins_, "checkpoint", "c"}, {&state_, "record", "r"}}));
  });
  std::filesystem::remove(plugins_.folder() / "checkpoint");
  std::filesystem::remove(state_.folder() / "record");
  // The first record, at 4096: a 28-byte header (its CRC last, over the header's bytes 4 to 24
  // and the payload), then the payload, where "checkpoint" becomes ".heckpoint".
  std::string bytes = *ReadWholeFile(dir_.Sub("state/journal"));
  constexpr size_t kRecord = 4096;
  const size_t length = static_cast<uint8_t>(bytes[kRecord + 20]) |
                        static_cast<size_t>(static_cast<uint8_t>(bytes[kRecord + 21])) << 8;
  std::string payload = bytes.substr(kRecord + 28, length);
  const size_t name = payload.find("checkpoint");
  ASSERT_NE(name, std::string::npos);
  payload[name] = '.';
  bytes.replace(kRecord + 28, length, payload);
  uint32_t crc = Crc32Feed(kCrc32Start, absl::string_view(bytes).substr(kRecord + 4, 20));
  crc = Crc32Feed(crc, payload);
  for (int i = 0; i < 4; ++i) bytes[kRecord + 24 + i] = static_cast<char>(crc >> (8 * i));
  std::ofstream(dir_.Sub("state/journal"), std::ios::binary | std::ios::trunc) << bytes;

  std::unique_ptr<StateJournal> journal = Open(Options());
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(journal->replayed(), 1u);
  EXPECT_EQ(*state_.Read("record"), "r");
  EXPECT_EQ(testing::EntriesOf(plugins_.folder()), std::vector<std::string>{});
}

// A folder is the same folder however a record spells it: a journal an older build wrote with
// a trailing '/' on the folders (a root given as "/var/lib/devmgr/") is replayed by one that
// spells them without. A spelling with '..' is never one of the folders, even one that leads
// back into them as text.
TEST_F(StateJournalTest, AFolderIsRecognisedHoweverARecordSpellsIt) {
  const FileStore slashed(plugins_.folder() / "");
  const FileStore dotted(state_.folder() / "." / "");
  const FileStore outside(plugins_.folder() / ".." / "elsewhere");
  const FileStore back(plugins_.folder() / ".." / "plugins");
  InChild([&] {
    StateJournal::Options spelled = Options();
    spelled.folders = {slashed.folder(), dotted.folder(), outside.folder(), back.folder()};
    StateJournal* dying = OpenInChild(spelled);
    Must(dying->WriteTogether({{&slashed, "checkpoint", "c"}, {&dotted, "record", "r"}}));
    Must(dying->WriteTogether({{&outside, "f", "x"}, {&back, "other", "o"}}));
  });
  std::filesystem::remove(plugins_.folder() / "checkpoint");
  std::filesystem::remove(state_.folder() / "record");
  std::filesystem::remove_all(dir_.Sub("elsewhere"));
  std::filesystem::remove(plugins_.folder() / "other");
  std::unique_ptr<StateJournal> journal = Open(Options());
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(journal->replayed(), 2u);
  EXPECT_EQ(*plugins_.Read("checkpoint"), "c");
  EXPECT_EQ(*state_.Read("record"), "r");
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("elsewhere")));
  EXPECT_FALSE(std::filesystem::exists(plugins_.folder() / "other"));
  EXPECT_EQ(journal->WriteTogether({{&back, "other", "o"}}).code(),
            absl::StatusCode::kInvalidArgument);
  // And a commit through a store that spells a folder otherwise is one of its folders.
  EXPECT_TRUE(journal->WriteTogether({{&slashed, "checkpoint", "c2"}}).ok());
  EXPECT_EQ(*plugins_.Read("checkpoint"), "c2");
}

// A commit that fails before the journal's flush changes nothing, now or after a restart.
TEST_F(StateJournalTest, ACommitFailedBeforeTheFlushChangesNothing) {
  ASSERT_TRUE(plugins_.Write("checkpoint", "old").ok());
  InChild([&] {
    StateJournal* journal = OpenInChild(Options());
    const FileStore failing(plugins_.folder(), [](FileStore::WriteStep step) {
      if (step == FileStore::WriteStep::kWrite) return absl::DataLossError("disk");
      return absl::OkStatus();
    });
    if (journal->WriteTogether({{&state_, "record", "r"}, {&failing, "checkpoint", "new"}})
            .code() != absl::StatusCode::kDataLoss) {
      ::_exit(5);
    }
  });
  EXPECT_EQ(*plugins_.List(), std::vector<std::string>{"checkpoint"});
  std::unique_ptr<StateJournal> journal = Open(Options());
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(journal->replayed(), 0u);
  EXPECT_EQ(*plugins_.Read("checkpoint"), "old");
  EXPECT_EQ(state_.Read("record").status().code(), absl::StatusCode::kNotFound);
}

// A commit whose flush failed may still reach the disk: it is never replayed, and the commits
// before it stay.
TEST_F(StateJournalTest, ACommitWhoseFlushFailedIsNeverReplayed) {
  InChild([&] {
    StateJournal::Options options = Options();
    bool fail = false;
    options.flush_fault = [&fail] {
      return fail ? absl::DataLossError("flush") : absl::OkStatus();
    };
    StateJournal* journal = OpenInChild(options);
    Must(journal->WriteTogether({{&plugins_, "checkpoint", "kept"}}));
    fail = true;
    if (journal->WriteTogether({{&plugins_, "checkpoint", "failed"}}).code() !=
        absl::StatusCode::kDataLoss) {
      ::_exit(7);
    }
  });
  // The failed record is complete in the journal's space (the page cache keeps it).
  ASSERT_NE(ReadFile(Options().path).find("failed"), std::string::npos);
  std::unique_ptr<StateJournal> journal = Open(Options());
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(journal->replayed(), 0u);
  EXPECT_EQ(*plugins_.Read("checkpoint"), "kept");
}

// A commit whose rename failed after the flush is taken as failed by its caller: it is never
// replayed either, and the commits before it stay.
TEST_F(StateJournalTest, ACommitWhoseRenameFailedIsNeverReplayed) {
  InChild([&] {
    StateJournal* journal = OpenInChild(Options());
    Must(journal->WriteTogether({{&plugins_, "checkpoint", "kept"}}));
    const FileStore failing(plugins_.folder(), [](FileStore::WriteStep step) {
      if (step == FileStore::WriteStep::kRename) return absl::PermissionDeniedError("rename");
      return absl::OkStatus();
    });
    if (journal->WriteTogether({{&failing, "checkpoint", "failed"}, {&state_, "record", "r"}})
            .code() != absl::StatusCode::kPermissionDenied) {
      ::_exit(7);
    }
  });
  std::unique_ptr<StateJournal> journal = Open(Options());
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(journal->replayed(), 0u);
  EXPECT_EQ(*plugins_.Read("checkpoint"), "kept");
  EXPECT_EQ(state_.Read("record").status().code(), absl::StatusCode::kNotFound);
}

// A journal whose header is not one (a crash while it was created, damage, or another file
// there) holds no record: it is started anew. Damage is logged as an error, since records it
// held are lost, and the journal is copied aside first; the zeros a crash during the journal's
// creation leaves are neither.
TEST_F(StateJournalTest, AnUnreadableJournalIsStartedAnew) {
  std::filesystem::path aside = Options().path;
  aside += ".corrupt";
  for (const char fill : {'g', '\0'}) {
    SCOPED_TRACE(static_cast<int>(fill));
    const std::string damaged(10000, fill);
    WriteByHand(Options().path, damaged);
    ASSERT_TRUE(plugins_.Write("checkpoint", "kept").ok());
    std::ostringstream log;
    StateJournal::Options options = Options();
    options.logger = std::make_shared<spdlog::logger>(
        "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
    std::unique_ptr<StateJournal> journal = Open(options);
    ASSERT_NE(journal, nullptr);
    EXPECT_EQ(journal->replayed(), 0u);
    EXPECT_EQ(*plugins_.Read("checkpoint"), "kept");
    EXPECT_EQ(log.str().find("The state journal's header is damaged") != std::string::npos,
              fill != '\0')
        << log.str();
    // A damaged one is kept for a human, since its records are overwritten from now on; one a
    // crash cut before its header was written holds nothing to keep.
    EXPECT_EQ(ReadWholeFile(aside).value_or("none"), fill != '\0' ? damaged : "none");
    ASSERT_TRUE(journal->WriteTogether({{&plugins_, "checkpoint", "c"}}).ok());
    EXPECT_EQ(*plugins_.Read("checkpoint"), "c");
    journal.reset();
    std::filesystem::remove(Options().path);
    std::filesystem::remove(aside);
  }
}

// A journal damaged again, with other bytes, is kept beside the copy of the first damage.
TEST_F(StateJournalTest, ASecondDamagedJournalIsKeptBesideTheFirst) {
  for (const char fill : {'g', 'h'}) {
    WriteByHand(Options().path, std::string(10000, fill));
    std::unique_ptr<StateJournal> journal = Open(Options());
    ASSERT_NE(journal, nullptr);
  }
  std::filesystem::path first = Options().path;
  first += ".corrupt";
  std::filesystem::path second = Options().path;
  second += ".corrupt.1";
  EXPECT_EQ(ReadWholeFile(first).value_or(""), std::string(10000, 'g'));
  EXPECT_EQ(ReadWholeFile(second).value_or(""), std::string(10000, 'h'));
}

}  // namespace
}  // namespace devmgr
