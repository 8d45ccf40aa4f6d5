// StateJournal: makes a group of state files durable with one fdatasync of a journal file,
// where FileStore::WriteAcross needs an fsync of every file and of every folder.
//
// A commit writes each file's new bytes to a temporary file beside it (not synced), appends one
// record holding all of them to the journal, fdatasyncs the journal and then renames the
// temporary files over their files. The journal's space is written once when it is created and
// then overwritten in place, so that its fdatasync flushes data alone, never the file system's
// own journal: on this project's machines about a fifth of what writing one file durably costs
// (docs/PERFORMANCE.md). The files themselves stay byte for byte what they were (the
// kubelet's checkpoint among them); what changes is when they reach the disk.
//
// After a crash the files may be older than the journal (a power cut before the kernel wrote
// them back, or a kill between the journal's flush and the renames): Open replays the journal's
// records in order, writing the latest bytes of each file durably, before anything reads them.
// A compaction makes the files durable themselves (an fsync of each file a record named since
// the last compaction, and of their folders) and starts the journal anew; it runs when the
// journal is full, once commits pause for `idle_compaction` (or have gone on for
// `max_compaction_delay` without one), and when the journal is destroyed,
// so that a node stopped cleanly leaves current files and an empty journal. A compaction also
// gives back space the files no longer need: once the journal holds more than twice the room
// for kRecordsKept records of every file at its latest size (a node that held many pods and
// holds few), it is cut to that room (or to `initial_capacity`). The bound counts every file,
// not only those written lately, so that a pause in which only a small file changed never cuts
// the room a large one needs at its next commit. Until a compaction
// the files on disk may be behind after a power cut: only a program that replays the journal
// (devmgr at its start) sees the latest state then.
//
// A commit that fails after its record was written (its flush, or a rename after the flush)
// retires its epoch at once, with a compaction, so that its record is never replayed over what
// the caller was told had failed.
//
// Records carry the epoch of the journal's header, which changes at every compaction and every
// Open, and a CRC-32 of their content: a torn record, or one left from an earlier epoch in
// space that is being overwritten, ends the replay. They also carry the time of their commit: a
// file modified after its last record (by a kubelet that ran on the root after a crash, or by
// hand) was not written by devmgr, and is left as it is, with a warning.
//
// Once a journal is open, every file it has written must be written through it: a write around
// it could be undone by a replay of an older record. Thread-safe; commits are serialised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/durable_writer.h"
#include "common/file_store.h"
#include "common/logging.h"

namespace devmgr {

class StateJournal final : public DurableWriter {
 public:
  struct Options {
    // The journal file.
    std::filesystem::path path;
    // The folders whose files the journal may write; a commit or a record that names another
    // one is refused.
    std::vector<std::filesystem::path> folders;
    // Space written for records when the journal is created; it grows to hold at least
    // kRecordsKept of the largest record.
    size_t initial_capacity = size_t{4} << 20;
    // A compaction runs once no commit came for this long; zero: only when full or destroyed.
    absl::Duration idle_compaction = absl::Seconds(1);
    // With idle_compaction set, a compaction also runs once the oldest commit not compacted is
    // this old (or idle_compaction old, if that is longer), however steadily commits come: the
    // files themselves, what a kubelet would read after a power cut, are not left behind for
    // as long as the node is busy. Zero: no such bound.
    absl::Duration max_compaction_delay = absl::Seconds(10);
    LoggerPtr logger;
    // For tests: called before each record's fdatasync; a non-OK answer fails the commit as a
    // failed fdatasync does.
    std::function<absl::Status()> flush_fault;
  };
  // Records of the largest size seen that the journal's space holds before a compaction.
  static constexpr size_t kRecordsKept = 8;

  // Open opens the journal at options.path, creating it if it is missing, replays the records
  // it holds and removes the temporary files that interrupted writes left in its folders
  // (FileStore::RemoveTemporaries). An error when the journal cannot be created, read or written,
  // or a replayed file cannot be written; a journal whose header is unreadable (a crash while it
  // was created, or damage, which is logged as an error) holds no record and is started anew.
  static absl::StatusOr<std::unique_ptr<StateJournal>> Open(Options options);

  // Compacts (a failure is logged) and stops the idle compaction.
  ~StateJournal() override;
  StateJournal(const StateJournal&) = delete;
  StateJournal& operator=(const StateJournal&) = delete;

  // DurableWriter: commits `files` (names in the options' folders, distinct). On success they
  // are durable and renamed in the order given. An error before the journal's flush changes
  // nothing; an error renaming after it leaves files renamed before it new, and all of them new
  // after a replay.
  absl::Status WriteTogether(std::vector<FileStore::PlacedBytes> files) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // Compact makes every file committed so far durable by itself and empties the journal.
  absl::Status Compact() ABSL_LOCKS_EXCLUDED(mu_);

  // replayed: how many files Open restored from records; compactions: how many ran since.
  size_t replayed() const { return replayed_; }
  uint64_t compactions() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  StateJournal(Options options, int fd);

  // CompactLocked makes the files committed so far durable and starts a new epoch, in room
  // for `next_record` bytes (0: none is waiting), and for kRecordsKept records of the largest
  // size where the disk allows.
  absl::Status CompactLocked(size_t next_record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RetireEpochLocked: a commit failed after its record was written; the epoch is retired at
  // once (a compaction, or the next commit's when that fails, which is logged) so that the
  // record is never replayed.
  void RetireEpochLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Append writes the record of `files` at the end of the records and flushes it.
  absl::Status Append(const std::vector<FileStore::PlacedBytes>& files)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Grow extends the journal's space, written and synced, to hold `bytes` after the header; when
  // it fails, the file is cut back to the space it had.
  absl::Status Grow(size_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ShrinkToFitLocked cuts the journal's space to the room its files need (the class comment),
  // and `largest` record, when it holds more than twice that; after a new epoch began, so that
  // the space cut holds no record a replay could read. A failure is logged: the journal goes on
  // in the space it has.
  void ShrinkToFitLocked(size_t largest) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RecordBoundLocked: the largest record the files could make, each at its latest size.
  size_t RecordBoundLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // NoteFolderFilesLocked takes the size of every regular file in the journal's folders (the
  // journal's own file, dot-names and damaged copies aside) as the size its records would carry.
  void NoteFolderFilesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // StartEpoch writes a header with a new epoch and flushes it; records start after it.
  absl::Status StartEpoch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Replay(uint64_t epoch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool AllowedFolder(const std::filesystem::path& folder) const;
  void RunIdleCompaction() ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  // options_.folders, each in the one spelling AllowedFolder compares (OneSpelling).
  const std::vector<std::filesystem::path> allowed_folders_;
  const int fd_;
  size_t replayed_ = 0;
  mutable absl::Mutex mu_;
  size_t capacity_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  // Where the next record goes.
  size_t end_ ABSL_GUARDED_BY(mu_) = 0;
  // The largest record committed since the last compaction.
  size_t largest_record_ ABSL_GUARDED_BY(mu_) = 0;
  // The latest size of each file, by folder and name: those found at Open, then those committed.
  std::map<std::filesystem::path, std::map<std::string, size_t, std::less<>>> file_bytes_
      ABSL_GUARDED_BY(mu_);
  // When a compaction may try again to grow the journal for kRecordsKept records.
  absl::Time grow_again_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // The files records named since the last compaction, by folder.
  std::map<std::filesystem::path, std::set<std::string>> touched_ ABSL_GUARDED_BY(mu_);
  absl::Time last_commit_ ABSL_GUARDED_BY(mu_);
  // When the first commit since the last compaction was made; InfiniteFuture when none was.
  absl::Time first_uncompacted_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  uint64_t compactions_ ABSL_GUARDED_BY(mu_) = 0;
  // A flush failed: this epoch's records are retired before the next commit.
  bool stale_epoch_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Last: starts once the fields above exist.
  std::thread idle_thread_;
};

}  // namespace devmgr
