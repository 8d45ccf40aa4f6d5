// FileStore keeps small named files (the checkpoint) in one folder and replaces them atomically
// and durably: a temporary file in the same folder is written, fsynced and renamed over the old
// one, and then the folder itself is fsynced so the rename survives a power cut. The kubelet
// skips that last step; we don't. A write that fails at any step before the rename leaves the
// previous file as it was, and no temporary file behind; one whose folder fsync failed has the new
// file in place, not yet durable. One a crash interrupts may leave its temporary file, which
// RemoveTemporaries takes away at the next start. Files are created with mode 0600.
//
// A FileStore holds no state besides its folder, so concurrent calls are as safe as the file
// system makes them; callers serialise writes to one name.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr {

// Largest file ReadWholeFile accepts, and FileStore writes; a real checkpoint with 10,000 entries
// is a few MiB.
inline constexpr size_t kMaxFileBytes = size_t{256} << 20;

// ReadWholeFile returns the content of `path`. NotFound if it does not exist, FailedPrecondition
// if it is not a regular file (or, with follow_symlinks false, is a symlink),
// ResourceExhausted over `max_bytes`, Internal on other I/O errors.
absl::StatusOr<std::string> ReadWholeFile(const std::filesystem::path& path,
                                          bool follow_symlinks = true,
                                          size_t max_bytes = kMaxFileBytes);

class FileStore {
 public:
  // The steps of Write, in order. Tests inject faults before any of them.
  enum class WriteStep { kCreateTemp, kWrite, kSyncFile, kCloseFile, kRename, kSyncFolder };
  // Called before each step; a non-OK answer makes that step fail. For tests only.
  using FaultHook = std::function<absl::Status(WriteStep)>;

  explicit FileStore(std::filesystem::path folder, FaultHook fault_hook = nullptr);

  const std::filesystem::path& folder() const { return folder_; }

  // Write replaces the file `name` with `bytes`, creating the folder (0755) if it is missing.
  // InvalidArgument for a name that is not a plain file name (see IsValidName).
  absl::Status Write(absl::string_view name, absl::string_view bytes) const;

  // One file of WriteTogether.
  struct NamedBytes {
    absl::string_view name;
    absl::string_view bytes;
  };
  // WriteTogether replaces several files (distinct names) with one flush of the disk instead of
  // one per file: every temporary file is written and synced, then each is renamed over its
  // file in the order given, then the folder is synced once. After a crash each file is old or
  // new; one renamed later is new only if every one before it is too on file systems that keep
  // the order of renames (ext4, XFS, btrfs), which callers must not rely on alone. An error
  // before the first rename changes nothing; a later one leaves the files renamed before it new.
  // The fault hook is called before every step of every file.
  absl::Status WriteTogether(const std::vector<NamedBytes>& files) const;

  // One file of WriteAcross: `name` in the folder of `store`.
  struct PlacedBytes {
    const FileStore* store;
    absl::string_view name;
    absl::string_view bytes;
  };
  // WriteAcross is WriteTogether for files in the folders of several stores (on one file
  // system, as the kubelet's state folders are): every temporary file is written and synced,
  // each is renamed over its file in the order given, then each folder is synced once, in the
  // order it is first named. Each store's fault hook is called before the steps of its files and
  // of its folder. (store, name) pairs must be distinct.
  static absl::Status WriteAcross(const std::vector<PlacedBytes>& files);

  // WriteAcrossCommitted is WriteAcross with the durability left to `commit` (a journal's one
  // flush, see StateJournal): the temporary files are written and closed without a sync, then
  // `commit` runs, and only when it succeeds are they put in place, in the order given (an
  // existing regular file by exchanging names and removing the old one, so that ext4 writes
  // nothing out before the journal's compaction; anything else by a rename); no folder is
  // synced. A failure before or in `commit` removes the temporary files and changes nothing.
  static absl::Status WriteAcrossCommitted(const std::vector<PlacedBytes>& files,
                                           absl::FunctionRef<absl::Status()> commit);

  // Read returns the file's content; NotFound when it does not exist. Symlinks are not followed.
  absl::StatusOr<std::string> Read(absl::string_view name) const;

  // Rename gives file `from` the name `to`, replacing any file `to` (how a corrupt record is
  // kept aside). InvalidArgument for names that are not plain file names.
  absl::Status Rename(absl::string_view from, absl::string_view to) const;

  // List returns the names of the folder's entries that do not start with '.', sorted: the
  // kubelet's test for "this node's device state was wiped". NotFound if the folder is missing.
  absl::StatusOr<std::vector<std::string>> List() const;

  // RemoveTemporaries removes the temporary files that writes interrupted by a crash left in
  // the folder (regular files named ".NAME.tmp-XXXXXX", NAME a valid name) and nothing else;
  // returns how many. Only for a folder no write is in flight in: at start, before the
  // folder's files are written. A missing folder holds none.
  absl::StatusOr<size_t> RemoveTemporaries() const;

  // IsValidName: 1 to 250 characters of [A-Za-z0-9._-], starting and ending with a letter or
  // digit, as the kubelet's file store requires. Such a name cannot leave the folder.
  static bool IsValidName(absl::string_view name);

 private:
  absl::Status Step(WriteStep step) const;
  // WriteAcross, and WriteAcrossCommitted when `commit` is set.
  static absl::Status WriteFiles(const std::vector<PlacedBytes>& files,
                                 const absl::FunctionRef<absl::Status()>* commit);

  std::filesystem::path folder_;
  FaultHook fault_hook_;
};

}  // namespace devmgr
