#include "common/state_journal.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/crc32.h"
#include "common/damaged_copy.h"
#include "common/errno_status.h"

namespace devmgr {
namespace {

// The header: a magic, the epoch, a CRC-32 of both, in the first page of the file.
constexpr char kHeaderMagic[8] = {'D', 'M', 'G', 'R', 'J', 'R', 'N', 'L'};
constexpr size_t kHeaderBytes = 4096;
// A record: a magic, the epoch, the time of the commit (nanoseconds of the realtime clock), the
// payload's length, a CRC-32 of the epoch, the time, the length and the payload; then the
// payload: the number of files, and for each its folder, name and bytes, each a 32-bit length
// and its bytes. Integers are little-endian.
constexpr uint32_t kRecordMagic = 0x524a4d44;  // "DMJR"
constexpr size_t kRecordHeaderBytes = 28;
constexpr size_t kMaxRecordBytes = size_t{1} << 30;
// The largest damaged journal copied aside before it is started anew; a larger one is only
// reported (a copy would take as much room again, on the disk the state lives on).
constexpr size_t kMaxDamagedCopyBytes = size_t{64} << 20;

// OneSpelling: `folder` without '.' parts, repeated '/' or a trailing '/', so that a folder is
// recognised however a record (one an older build wrote, say) or a caller spells it. A '..'
// part is left as it is, so that such a spelling is never taken for a folder: resolved as text,
// it could name another folder than the one it leads to on disk (through a symlink).
std::filesystem::path OneSpelling(const std::filesystem::path& folder) {
  for (const std::filesystem::path& part : folder) {
    if (part == "..") return folder;
  }
  std::filesystem::path normal = folder.lexically_normal();
  if (!normal.has_filename() && normal.has_relative_path()) normal = normal.parent_path();
  return normal;
}

std::vector<std::filesystem::path> OneSpellings(const std::vector<std::filesystem::path>& folders) {
  std::vector<std::filesystem::path> spelled;
  spelled.reserve(folders.size());
  for (const std::filesystem::path& folder : folders) spelled.push_back(OneSpelling(folder));
  return spelled;
}

void PutU32(std::string& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}
void PutU64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}
uint64_t GetLittleEndian(absl::string_view bytes, size_t at, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[at + static_cast<size_t>(i)]);
  }
  return value;
}

// WriteAllAt writes `pieces` one after the other from `offset`: a record (its head, and each
// file's name and bytes) in one system call, where a write each cost a trap apiece.
absl::Status WriteAllAt(int fd, const std::vector<absl::string_view>& pieces, size_t offset,
                        const std::filesystem::path& path) {
  std::vector<iovec> left;
  left.reserve(pieces.size());
  for (absl::string_view piece : pieces) {
    if (!piece.empty()) left.push_back({const_cast<char*>(piece.data()), piece.size()});
  }
  size_t first = 0;
  while (first < left.size()) {
    const int count = static_cast<int>(std::min<size_t>(left.size() - first, IOV_MAX));
    const ssize_t n = ::pwritev(fd, &left[first], count, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot write", path);
    }
    if (n == 0) return ErrnoStatus(EIO, "cannot write", path);
    offset += static_cast<size_t>(n);
    // Past what was written: whole pieces, then part of the next one.
    for (size_t done = static_cast<size_t>(n); done > 0;) {
      iovec& piece = left[first];
      if (done >= piece.iov_len) {
        done -= piece.iov_len;
        ++first;
      } else {
        piece.iov_base = static_cast<char*>(piece.iov_base) + done;
        piece.iov_len -= done;
        done = 0;
      }
    }
  }
  return absl::OkStatus();
}

// ReadAt reads `size` bytes at `offset`; fewer at the end of the file.
absl::StatusOr<std::string> ReadAt(int fd, size_t offset, size_t size,
                                   const std::filesystem::path& path) {
  std::string bytes(size, '\0');
  size_t done = 0;
  while (done < size) {
    const ssize_t n =
        ::pread(fd, bytes.data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot read", path);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

absl::Status SyncPath(const std::filesystem::path& path, int flags) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | flags);
  if (fd < 0) {
    // A file renamed away since (a corrupt checkpoint kept aside) has nothing left to sync.
    if (errno == ENOENT) return absl::OkStatus();
    return ErrnoStatus(errno, "cannot open", path);
  }
  const int synced = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (synced != 0) return ErrnoStatus(error, "cannot fsync", path);
  return absl::OkStatus();
}

size_t RoundUpToPage(size_t bytes) {
  const size_t page = 4096;
  return (bytes + page - 1) / page * page;
}

uint64_t NewEpoch(uint64_t old) {
  std::random_device random;
  uint64_t epoch = old;
  while (epoch == old || epoch == 0) {
    epoch = (uint64_t{random()} << 32) | random();
  }
  return epoch;
}

// A record's files, decoded.
struct RecordedFile {
  std::string folder;
  std::string name;
  std::string bytes;
  // When the record was committed.
  int64_t committed_nanos = 0;
};

// ChangedSince: the file at `path` was modified after `nanos` (realtime). A file devmgr wrote
// never is: its bytes were written before the commit that renamed it. One that is was written
// by another program after devmgr stopped (a kubelet on the same root, an operator).
bool ChangedSince(const std::filesystem::path& path, int64_t nanos) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return false;
  const int64_t modified = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  return modified > nanos;
}

// DecodePayload: the files of a record whose CRC matched; false if its lengths do not add up.
bool DecodePayload(absl::string_view payload, std::vector<RecordedFile>& files) {
  size_t at = 0;
  auto next = [&](std::string& out) {
    if (payload.size() - at < 4) return false;
    const size_t length = GetLittleEndian(payload, at, 4);
    at += 4;
    if (payload.size() - at < length) return false;
    out.assign(payload.data() + at, length);
    at += length;
    return true;
  };
  if (payload.size() < 4) return false;
  const size_t count = GetLittleEndian(payload, 0, 4);
  at = 4;
  for (size_t i = 0; i < count; ++i) {
    RecordedFile file;
    if (!next(file.folder) || !next(file.name) || !next(file.bytes)) return false;
    files.push_back(std::move(file));
  }
  return at == payload.size();
}

}  // namespace

StateJournal::StateJournal(Options options, int fd)
    : options_(std::move(options)),
      allowed_folders_(OneSpellings(options_.folders)),
      fd_(fd),
      idle_thread_([this] { RunIdleCompaction(); }) {}

absl::StatusOr<std::unique_ptr<StateJournal>> StateJournal::Open(Options options) {
  const int fd = ::open(options.path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return ErrnoStatus(errno, "cannot open the state journal", options.path);
  std::unique_ptr<StateJournal> journal(new StateJournal(std::move(options), fd));
  const std::filesystem::path& path = journal->options_.path;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "cannot stat", path);
  absl::MutexLock lock(&journal->mu_);
  const size_t size = static_cast<size_t>(st.st_size);
  uint64_t epoch = 0;
  if (size >= kHeaderBytes) {
    absl::StatusOr<std::string> header = ReadAt(fd, 0, 20, path);
    if (!header.ok()) return header.status();
    if (header->size() == 20 && header->compare(0, 8, kHeaderMagic, 8) == 0 &&
        GetLittleEndian(*header, 16, 4) ==
            Crc32Feed(kCrc32Start, absl::string_view(*header).substr(0, 16))) {
      epoch = GetLittleEndian(*header, 8, 8);
    } else if (header->find_first_not_of('\0') != std::string::npos) {
      // Zeros are a header a crash cut before it was written; anything else was one, and the
      // records after it, which may hold the latest state, cannot be told from older ones. A
      // copy keeps them for a human, since starting anew overwrites them.
      absl::StatusOr<std::string> kept = absl::FailedPreconditionError(
          absl::StrCat(size, " bytes, more than ", kMaxDamagedCopyBytes));
      if (size <= kMaxDamagedCopyBytes) {
        absl::StatusOr<std::string> bytes = ReadAt(fd, 0, size, path);
        const FileStore folder(path.parent_path());
        kept =
            bytes.ok() ? KeepDamagedCopy(folder, path.filename().string(), *bytes) : bytes.status();
      }
      DEVMGR_LOG(journal->options_.logger, err,
                 "The state journal's header is damaged: its records are not replayed, so the "
                 "state files are as they were last written whole; the journal is started anew",
                 "path", path.string(), "copiedTo", kept.ok() ? *kept : "", "copyErr",
                 kept.status());
    }
    journal->capacity_ = size - kHeaderBytes;
  }
  if (size < kHeaderBytes) {
    // A new journal: the header's page is written once here, overwritten in place from then on.
    if (absl::Status written = WriteAllAt(fd, {std::string(kHeaderBytes, '\0')}, 0, path);
        !written.ok()) {
      return written;
    }
  }
  if (epoch != 0) {
    if (absl::Status replayed = journal->Replay(epoch); !replayed.ok()) return replayed;
  }
  // A kill inside a commit leaves a temporary file beside its file; nothing writes yet.
  for (const std::filesystem::path& folder : journal->options_.folders) {
    absl::StatusOr<size_t> removed = FileStore(folder).RemoveTemporaries();
    if (!removed.ok()) return removed.status();
    if (*removed > 0) {
      DEVMGR_LOG(journal->options_.logger, info,
                 "Removed temporary files an interrupted write left", "folder", folder.string(),
                 "files", *removed);
    }
  }
  journal->NoteFolderFilesLocked();
  if (journal->capacity_ < journal->options_.initial_capacity) {
    if (absl::Status grown = journal->Grow(journal->options_.initial_capacity); !grown.ok()) {
      return grown;
    }
  }
  journal->epoch_ = epoch;
  if (absl::Status started = journal->StartEpoch(); !started.ok()) return started;
  if (size < kHeaderBytes) {
    // A new journal: its name must survive a power cut before a record relies on it.
    if (absl::Status synced = SyncPath(path.parent_path(), O_DIRECTORY); !synced.ok()) {
      return synced;
    }
  }
  return journal;
}

StateJournal::~StateJournal() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  idle_thread_.join();
  if (absl::Status compacted = Compact(); !compacted.ok()) {
    DEVMGR_LOG(options_.logger, err, "Failed to compact the state journal", "path",
               options_.path.string(), "err", compacted);
  }
  ::close(fd_);
}

bool StateJournal::AllowedFolder(const std::filesystem::path& folder) const {
  return std::find(allowed_folders_.begin(), allowed_folders_.end(), OneSpelling(folder)) !=
         allowed_folders_.end();
}

absl::Status StateJournal::Replay(uint64_t epoch) {
  // The latest bytes of each file, in the order first named.
  std::vector<RecordedFile> latest;
  size_t at = kHeaderBytes;
  size_t records = 0;
  while (capacity_ + kHeaderBytes - at >= kRecordHeaderBytes) {
    absl::StatusOr<std::string> head = ReadAt(fd_, at, kRecordHeaderBytes, options_.path);
    if (!head.ok()) return head.status();
    if (head->size() < kRecordHeaderBytes || GetLittleEndian(*head, 0, 4) != kRecordMagic ||
        GetLittleEndian(*head, 4, 8) != epoch) {
      break;
    }
    const auto committed = static_cast<int64_t>(GetLittleEndian(*head, 12, 8));
    const size_t length = GetLittleEndian(*head, 20, 4);
    if (length > capacity_ + kHeaderBytes - at - kRecordHeaderBytes) break;
    absl::StatusOr<std::string> payload =
        ReadAt(fd_, at + kRecordHeaderBytes, length, options_.path);
    if (!payload.ok()) return payload.status();
    const uint32_t crc =
        Crc32Feed(Crc32Feed(kCrc32Start, absl::string_view(*head).substr(4, 20)), *payload);
    std::vector<RecordedFile> files;
    if (payload->size() != length || GetLittleEndian(*head, 24, 4) != crc ||
        !DecodePayload(*payload, files)) {
      break;
    }
    for (RecordedFile& file : files) {
      file.committed_nanos = committed;
      file.folder = OneSpelling(file.folder).string();
      auto same = std::find_if(latest.begin(), latest.end(), [&](const RecordedFile& kept) {
        return kept.folder == file.folder && kept.name == file.name;
      });
      if (same != latest.end()) {
        *same = std::move(file);
      } else {
        latest.push_back(std::move(file));
      }
    }
    ++records;
    at += kRecordHeaderBytes + length;
  }
  if (latest.empty()) return absl::OkStatus();
  std::vector<FileStore> stores;
  stores.reserve(latest.size());
  std::vector<FileStore::PlacedBytes> files;
  for (const RecordedFile& file : latest) {
    const std::filesystem::path path = std::filesystem::path(file.folder) / file.name;
    if (!AllowedFolder(file.folder)) {
      DEVMGR_LOG(options_.logger, warn, "The state journal names a file outside the node's folders",
                 "path", path.string());
      continue;
    }
    // No write of a state file gives such a name ("..", ".hidden"): the record was not ours.
    if (!FileStore::IsValidName(file.name)) {
      DEVMGR_LOG(options_.logger, warn, "The state journal names a file no state file is named",
                 "path", path.string());
      continue;
    }
    if (ChangedSince(path, file.committed_nanos)) {
      DEVMGR_LOG(options_.logger, warn,
                 "A state file was written by another program after the journal's last record "
                 "of it; the record is not restored",
                 "path", path.string());
      continue;
    }
    stores.emplace_back(file.folder);
    files.push_back({&stores.back(), file.name, file.bytes});
  }
  if (absl::Status written = FileStore::WriteAcross(files); !written.ok()) return written;
  replayed_ = files.size();
  DEVMGR_LOG(options_.logger, info, "Restored state files from the journal", "path",
             options_.path.string(), "records", static_cast<int64_t>(records), "files",
             static_cast<int64_t>(files.size()));
  return absl::OkStatus();
}

absl::Status StateJournal::Grow(size_t bytes) {
  const size_t target = RoundUpToPage(bytes);
  const std::string zeros(size_t{1} << 20, '\0');
  // A failed grow gives its space back: on a full disk, the zeros written would otherwise
  // hold what is left, and every later write on the disk (the next start's included) failed.
  const auto give_back = [this](absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (::ftruncate(fd_, static_cast<off_t>(kHeaderBytes + capacity_)) != 0) {
      DEVMGR_LOG(options_.logger, err, "Cannot give back the space of a failed journal grow",
                 "path", options_.path.string(), "err",
                 ErrnoStatus(errno, "cannot truncate", options_.path));
    }
    return status;
  };
  // The blocks are reserved first: on a disk without room that fails at once, where writing
  // zeros would first take the last free space from every other writer on the disk. The zeros
  // are still written, so that records land in written blocks and each commit's fdatasync has
  // no extent to convert. A file system without fallocate goes straight to the zeros.
  if (target > capacity_) {
    int reserved;
    do {
      reserved = ::fallocate(fd_, 0, static_cast<off_t>(kHeaderBytes + capacity_),
                             static_cast<off_t>(target - capacity_));
    } while (reserved != 0 && errno == EINTR);
    if (reserved != 0 && errno != EOPNOTSUPP && errno != ENOSYS) {
      return give_back(ErrnoStatus(errno, "cannot allocate", options_.path));
    }
  }
  for (size_t at = kHeaderBytes + capacity_; at < kHeaderBytes + target;) {
    const size_t n = std::min(zeros.size(), kHeaderBytes + target - at);
    if (absl::Status written =
            WriteAllAt(fd_, {absl::string_view(zeros).substr(0, n)}, at, options_.path);
        !written.ok()) {
      return give_back(written);
    }
    at += n;
  }
  if (::fsync(fd_) != 0) return give_back(ErrnoStatus(errno, "cannot fsync", options_.path));
  capacity_ = target;
  return absl::OkStatus();
}

size_t StateJournal::RecordBoundLocked() const {
  size_t bound = kRecordHeaderBytes + 4;
  for (const auto& [folder, files] : file_bytes_) {
    for (const auto& [name, bytes] : files) {
      bound += 12 + folder.native().size() + name.size() + bytes;
    }
  }
  return bound;
}

void StateJournal::NoteFolderFilesLocked() {
  struct stat journal {};
  if (::fstat(fd_, &journal) != 0) return;
  for (const std::filesystem::path& folder : options_.folders) {
    std::error_code error;
    for (std::filesystem::directory_iterator it(folder, error), end; !error && it != end;
         it.increment(error)) {
      const std::string name = it->path().filename().string();
      struct stat st {};
      // Damaged copies kept for a human (".corrupt") are never written again.
      if (name.empty() || name.front() == '.' || absl::StrContains(name, kDamagedCopySuffix) ||
          ::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
          (st.st_dev == journal.st_dev && st.st_ino == journal.st_ino)) {
        continue;
      }
      file_bytes_[folder][name] = static_cast<size_t>(st.st_size);
    }
  }
}

void StateJournal::ShrinkToFitLocked(size_t largest) {
  const size_t room = RoundUpToPage(
      std::max(options_.initial_capacity, kRecordsKept * std::max(largest, RecordBoundLocked())));
  if (capacity_ / 2 <= room) return;
  if (::ftruncate(fd_, static_cast<off_t>(kHeaderBytes + room)) != 0) {
    DEVMGR_LOG(options_.logger, warn, "Cannot give back state journal space", "path",
               options_.path.string(), "err", ErrnoStatus(errno, "cannot truncate", options_.path));
    return;
  }
  DEVMGR_LOG(options_.logger, info, "Gave back state journal space its files no longer need",
             "path", options_.path.string(), "bytes", static_cast<int64_t>(capacity_), "keptBytes",
             static_cast<int64_t>(room));
  capacity_ = room;
}

absl::Status StateJournal::StartEpoch() {
  const uint64_t epoch = NewEpoch(epoch_);
  std::string header(kHeaderMagic, sizeof(kHeaderMagic));
  PutU64(header, epoch);
  PutU32(header, Crc32Feed(kCrc32Start, header));
  if (absl::Status written = WriteAllAt(fd_, {header}, 0, options_.path); !written.ok()) {
    return written;
  }
  if (::fdatasync(fd_) != 0) return ErrnoStatus(errno, "cannot fdatasync", options_.path);
  epoch_ = epoch;
  end_ = kHeaderBytes;
  return absl::OkStatus();
}

absl::Status StateJournal::Append(const std::vector<FileStore::PlacedBytes>& files) {
  // Each file's lengths and names, then its bytes, written where they are.
  std::vector<std::string> prefixes;
  prefixes.reserve(files.size() + 1);
  prefixes.emplace_back();
  PutU32(prefixes.back(), static_cast<uint32_t>(files.size()));
  size_t length = 4;
  for (const FileStore::PlacedBytes& file : files) {
    std::string prefix;
    const std::string folder = file.store->folder().string();
    PutU32(prefix, static_cast<uint32_t>(folder.size()));
    prefix += folder;
    PutU32(prefix, static_cast<uint32_t>(file.name.size()));
    prefix.append(file.name.data(), file.name.size());
    PutU32(prefix, static_cast<uint32_t>(file.bytes.size()));
    length += prefix.size() + file.bytes.size();
    prefixes.push_back(std::move(prefix));
  }
  if (length > kMaxRecordBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a journal record of ", length, " bytes is over the limit"));
  }
  const size_t record = kRecordHeaderBytes + length;
  if (stale_epoch_ || end_ + record > kHeaderBytes + capacity_) {
    if (absl::Status compacted = CompactLocked(record); !compacted.ok()) return compacted;
  }
  std::string head;
  PutU32(head, kRecordMagic);
  PutU64(head, epoch_);
  // Taken after the files' bytes were written: none of them is newer.
  PutU64(head, static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())));
  PutU32(head, static_cast<uint32_t>(length));
  uint32_t crc = Crc32Feed(kCrc32Start, absl::string_view(head).substr(4));
  std::vector<absl::string_view> pieces = {prefixes[0]};
  for (size_t i = 0; i < files.size(); ++i) {
    pieces.push_back(prefixes[i + 1]);
    pieces.push_back(files[i].bytes);
  }
  for (absl::string_view piece : pieces) crc = Crc32Feed(crc, piece);
  PutU32(head, crc);
  pieces.insert(pieces.begin(), head);
  if (absl::Status written = WriteAllAt(fd_, pieces, end_, options_.path); !written.ok()) {
    return written;
  }
  absl::Status flushed = options_.flush_fault ? options_.flush_fault() : absl::OkStatus();
  if (flushed.ok() && ::fdatasync(fd_) != 0) {
    flushed = ErrnoStatus(errno, "cannot fdatasync", options_.path);
  }
  if (!flushed.ok()) {
    // The record may reach the disk all the same, and would then be replayed as a commit that
    // failed: this epoch's records are retired (their files made durable, a new epoch) before
    // anything else is committed.
    RetireEpochLocked();
    return flushed;
  }
  end_ += record;
  // Only a record committed counts: one that failed (it did not fit a full disk) would have
  // every later compaction try to make room for it.
  largest_record_ = std::max(largest_record_, record);
  for (const FileStore::PlacedBytes& file : files) {
    touched_[file.store->folder()].insert(std::string(file.name));
    std::map<std::string, size_t, std::less<>>& sizes = file_bytes_[file.store->folder()];
    if (auto known = sizes.find(file.name); known != sizes.end()) {
      known->second = file.bytes.size();
    } else {
      sizes.emplace(std::string(file.name), file.bytes.size());
    }
  }
  if (first_uncompacted_ == absl::InfiniteFuture()) first_uncompacted_ = absl::Now();
  return absl::OkStatus();
}

absl::Status StateJournal::WriteTogether(std::vector<FileStore::PlacedBytes> files) {
  for (const FileStore::PlacedBytes& file : files) {
    if (!AllowedFolder(file.store->folder())) {
      return absl::InvalidArgumentError(
          absl::StrCat("the state journal does not keep files in ", file.store->folder().string()));
    }
  }
  absl::MutexLock lock(&mu_);
  bool committed = false;
  absl::Status status =
      FileStore::WriteAcrossCommitted(files, [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        absl::Status appended = Append(files);
        committed = appended.ok();
        return appended;
      });
  last_commit_ = absl::Now();
  if (committed && !status.ok()) {
    // A rename failed after the flush: the caller takes the write as failed, so its record
    // must never be replayed. Its epoch is retired as after a failed flush; the files keep what
    // the renames left (those before the failed one are new, as a kill between them leaves
    // them).
    RetireEpochLocked();
  }
  return status;
}

void StateJournal::RetireEpochLocked() {
  stale_epoch_ = true;
  if (absl::Status compacted = CompactLocked(0); !compacted.ok()) {
    DEVMGR_LOG(options_.logger, err, "Failed to retire the state journal's records", "path",
               options_.path.string(), "err", compacted);
  }
}

absl::Status StateJournal::CompactLocked(size_t next_record) {
  for (const auto& [folder, names] : touched_) {
    for (const std::string& name : names) {
      if (absl::Status synced = SyncPath(folder / name, O_NOFOLLOW); !synced.ok()) return synced;
    }
    if (absl::Status synced = SyncPath(folder, O_DIRECTORY); !synced.ok()) return synced;
  }
  // Records of the largest size since the last compaction fit kRecordsKept times before the
  // next one (the room ShrinkToFitLocked keeps is no less). Where the disk has not that much
  // room, the journal goes on in the room it has, as long as the next record fits: it compacts
  // more often. A grow that failed is tried again a minute later, not at every compaction.
  const size_t largest = std::max(largest_record_, next_record);
  if (largest * kRecordsKept > capacity_ && absl::Now() >= grow_again_at_) {
    if (absl::Status grown = Grow(largest * kRecordsKept); !grown.ok()) {
      grow_again_at_ = absl::Now() + absl::Minutes(1);
      DEVMGR_LOG(options_.logger, warn,
                 "Cannot grow the state journal; it compacts more often in the room it has", "path",
                 options_.path.string(), "bytes", static_cast<int64_t>(capacity_), "err", grown);
    }
  }
  if (next_record > capacity_) {
    if (absl::Status grown = Grow(next_record); !grown.ok()) return grown;
  }
  if (absl::Status started = StartEpoch(); !started.ok()) return started;
  ShrinkToFitLocked(largest);
  largest_record_ = 0;
  touched_.clear();
  first_uncompacted_ = absl::InfiniteFuture();
  stale_epoch_ = false;
  ++compactions_;
  return absl::OkStatus();
}

absl::Status StateJournal::Compact() {
  absl::MutexLock lock(&mu_);
  if (touched_.empty() && !stale_epoch_) return absl::OkStatus();
  return CompactLocked(0);
}

uint64_t StateJournal::compactions() const {
  absl::MutexLock lock(&mu_);
  return compactions_;
}

void StateJournal::RunIdleCompaction() {
  if (options_.idle_compaction == absl::ZeroDuration()) return;
  absl::MutexLock lock(&mu_);
  for (;;) {
    mu_.Await(absl::Condition(
        +[](StateJournal* self)
             ABSL_NO_THREAD_SAFETY_ANALYSIS { return self->stopping_ || !self->touched_.empty(); },
        this));
    // Each commit moves the time; wait until the latest one is `idle_compaction` old, or the
    // oldest not compacted `max_compaction_delay` old (never sooner than a pause would).
    const auto due = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      absl::Time at = last_commit_ + options_.idle_compaction;
      if (options_.max_compaction_delay > absl::ZeroDuration()) {
        const absl::Duration longest =
            std::max(options_.max_compaction_delay, options_.idle_compaction);
        at = std::min(at, first_uncompacted_ + longest);
      }
      return at;
    };
    while (!stopping_ && absl::Now() < due()) {
      mu_.AwaitWithDeadline(absl::Condition(&stopping_), due());
    }
    if (stopping_) return;
    if (touched_.empty()) continue;
    if (absl::Status compacted = CompactLocked(0); !compacted.ok()) {
      DEVMGR_LOG(options_.logger, err, "Failed to compact the state journal", "path",
                 options_.path.string(), "err", compacted);
      // Tried again once the journal is idle again (or at the end).
      last_commit_ = absl::Now();
      first_uncompacted_ = last_commit_;
    }
  }
}

}  // namespace devmgr
