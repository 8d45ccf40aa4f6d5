#include "common/file_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/durable_folder.h"
#include "common/errno_status.h"

namespace devmgr {
namespace {

// Closes a file descriptor when it goes out of scope unless released.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// ReplaceUnsynced puts the temporary file `from`, written but not synced, in place of `to`.
// A rename over an existing file makes ext4 (its auto_da_alloc rule) write `from`'s data out
// before the rename returns, about 0.25 ms a file here, for a durability the caller's journal
// already gives. Exchanging the two names, then removing `from` (by then the old file), replaces
// a regular file `to` as atomically for its readers without that write. Anything else at `to`
// (nothing, a symlink, a folder), or a file system or kernel without RENAME_EXCHANGE, gets the
// plain rename and its answers. A failed removal leaves the old bytes under the temporary
// dot-name, never under `to`.
int ReplaceUnsynced(const char* from, const char* to) {
  struct stat st {};
  if (::lstat(to, &st) == 0 && S_ISREG(st.st_mode) &&
      ::renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_EXCHANGE) == 0) {
    ::unlink(from);
    return 0;
  }
  return ::rename(from, to);
}

// The suffix mkstemp fills in: six letters and digits.
constexpr absl::string_view kTempSuffix = ".tmp-";
constexpr size_t kTempRandomChars = 6;

// The longest file name Linux file systems take.
constexpr size_t kMaxFileName = 255;

// TempName: the name a write gives the temporary file of `name`, before mkstemp fills it in:
// the name itself, cut short where it would not fit (a valid name is up to 250 characters, the
// kubelet's limit), and then still a valid name, which IsTempName recognises.
std::string TempName(absl::string_view name) {
  const size_t room = kMaxFileName - 1 - kTempSuffix.size() - kTempRandomChars;
  if (name.size() > room) {
    name = name.substr(0, room);
    while (!absl::ascii_isalnum(name.back())) name.remove_suffix(1);
  }
  return absl::StrCat(".", name, kTempSuffix, std::string(kTempRandomChars, 'X'));
}

// IsTempName: whether `entry` is a name TempName made and mkstemp filled in.
bool IsTempName(absl::string_view entry) {
  if (!absl::ConsumePrefix(&entry, ".") || entry.size() <= kTempSuffix.size() + kTempRandomChars) {
    return false;
  }
  const absl::string_view random = entry.substr(entry.size() - kTempRandomChars);
  entry.remove_suffix(kTempRandomChars);
  return absl::c_all_of(random, [](char c) { return absl::ascii_isalnum(c); }) &&
         absl::ConsumeSuffix(&entry, kTempSuffix) && FileStore::IsValidName(entry);
}

bool WriteAll(int fd, absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> ReadWholeFile(const std::filesystem::path& path, bool follow_symlinks,
                                          size_t max_bytes) {
  // O_NONBLOCK: a FIFO put where the file goes must not block the open (it is refused below);
  // it changes nothing for a regular file.
  const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow_symlinks ? 0 : O_NOFOLLOW);
  FdCloser fd(::open(path.c_str(), flags));
  if (fd.get() < 0) return ErrnoStatus(errno, "cannot open", path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, "cannot stat", path);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path.string(), " is not a regular file"));
  }
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path.string(), " is ", st.st_size, " bytes; the limit is ", max_bytes));
  }
  std::string content;
  // One byte more than the file holds: the read that meets its end then needs no larger buffer
  // (growing would copy the whole file into a new one).
  content.resize(std::min(max_bytes, static_cast<size_t>(st.st_size) + 1));
  size_t done = 0;
  while (true) {
    if (done == content.size()) {
      // The file may have grown since fstat; read on until EOF, within the limit.
      if (content.size() >= max_bytes) break;
      content.resize(std::min(max_bytes, content.size() + 4096));
    }
    const ssize_t n = ::read(fd.get(), content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot read", path);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  content.resize(done);
  return content;
}

FileStore::FileStore(std::filesystem::path folder, FaultHook fault_hook)
    : folder_(std::move(folder)), fault_hook_(std::move(fault_hook)) {}

bool FileStore::IsValidName(absl::string_view name) {
  if (name.empty() || name.size() > 250) return false;
  if (!absl::ascii_isalnum(name.front()) || !absl::ascii_isalnum(name.back())) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

absl::Status FileStore::Step(WriteStep step) const {
  return fault_hook_ ? fault_hook_(step) : absl::OkStatus();
}

absl::Status FileStore::Write(absl::string_view name, absl::string_view bytes) const {
  return WriteTogether({{name, bytes}});
}

absl::Status FileStore::WriteTogether(const std::vector<NamedBytes>& files) const {
  std::vector<PlacedBytes> placed;
  placed.reserve(files.size());
  for (const NamedBytes& file : files) placed.push_back({this, file.name, file.bytes});
  return WriteAcross(placed);
}

absl::Status FileStore::WriteAcross(const std::vector<PlacedBytes>& files) {
  return WriteFiles(files, nullptr);
}

absl::Status FileStore::WriteAcrossCommitted(const std::vector<PlacedBytes>& files,
                                             absl::FunctionRef<absl::Status()> commit) {
  return WriteFiles(files, &commit);
}

absl::Status FileStore::WriteFiles(const std::vector<PlacedBytes>& files,
                                   const absl::FunctionRef<absl::Status()>* commit) {
  // The stores whose folders are synced at the end, in the order first named.
  std::vector<const FileStore*> stores;
  for (const PlacedBytes& file : files) {
    if (!IsValidName(file.name)) {
      return absl::InvalidArgumentError(absl::StrCat("invalid file name \"", file.name, "\""));
    }
    // Never a file that could not be read back: a checkpoint a plugin's answers had grown past
    // the limit was written, and the next start lost every pod's devices with it.
    if (file.bytes.size() > kMaxFileBytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          (file.store->folder_ / std::string(file.name)).string(), " would be ", file.bytes.size(),
          " bytes; the limit a read of it takes is ", kMaxFileBytes));
    }
    if (absl::c_any_of(stores, [&](const FileStore* store) {
          return store->folder_ == file.store->folder_;
        })) {
      continue;
    }
    stores.push_back(file.store);
    const std::filesystem::path& folder = file.store->folder_;
    absl::StatusOr<bool> made = CreateFolders(folder, 0755);
    if (!made.ok()) return made.status();
    if (*made && ::chmod(folder.c_str(), 0755) != 0) {
      return ErrnoStatus(errno, "cannot chmod", folder);
    }
  }

  struct Temp {
    std::string path;
    int fd = -1;
  };
  // Until the renames, every temporary file that exists is removed on failure.
  std::vector<Temp> temps(files.size());
  auto fail = [&](absl::Status status) {
    for (Temp& temp : temps) {
      if (temp.path.empty()) continue;
      if (temp.fd >= 0) ::close(std::exchange(temp.fd, -1));
      ::unlink(temp.path.c_str());
    }
    return status;
  };
  for (size_t i = 0; i < files.size(); ++i) {
    // A dot-name, so that List (and the kubelet's own listing) never sees a half-written file.
    const FileStore& store = *files[i].store;
    std::string path = (store.folder_ / TempName(files[i].name)).string();
    if (absl::Status status = store.Step(WriteStep::kCreateTemp); !status.ok()) {
      return fail(status);
    }
    const int fd = ::mkstemp(path.data());  // mode 0600
    if (fd < 0) return fail(ErrnoStatus(errno, "cannot create temporary file in", store.folder_));
    temps[i].path = std::move(path);
    temps[i].fd = fd;
    if (absl::Status status = store.Step(WriteStep::kWrite); !status.ok()) return fail(status);
    if (!WriteAll(fd, files[i].bytes)) {
      return fail(ErrnoStatus(errno, "cannot write", temps[i].path));
    }
    // Starts writing the data back now, so that the syncs below overlap on the disk instead
    // of following each other (a hint: fsync still waits for everything).
    if (commit == nullptr && files.size() > 1) ::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const FileStore& store = *files[i].store;
    Temp& temp = temps[i];
    if (commit == nullptr) {
      if (absl::Status status = store.Step(WriteStep::kSyncFile); !status.ok()) {
        return fail(status);
      }
      if (::fsync(temp.fd) != 0) return fail(ErrnoStatus(errno, "cannot fsync", temp.path));
    }
    if (absl::Status status = store.Step(WriteStep::kCloseFile); !status.ok()) {
      return fail(status);
    }
    if (::close(std::exchange(temp.fd, -1)) != 0) {
      return fail(ErrnoStatus(errno, "cannot close", temp.path));
    }
  }
  if (commit != nullptr) {
    if (absl::Status committed = (*commit)(); !committed.ok()) return fail(committed);
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const std::filesystem::path final_path = files[i].store->folder_ / std::string(files[i].name);
    absl::Status status = files[i].store->Step(WriteStep::kRename);
    if (status.ok()) {
      const char* from = temps[i].path.c_str();
      // A synced file gains nothing from the exchange: ext4 has nothing left to write.
      const int renamed = commit != nullptr ? ReplaceUnsynced(from, final_path.c_str())
                                            : ::rename(from, final_path.c_str());
      if (renamed != 0) status = ErrnoStatus(errno, "cannot rename over", final_path);
    }
    if (!status.ok()) {
      // The files before this one are in place; the rest are still temporary.
      for (size_t j = 0; j < i; ++j) temps[j].path.clear();
      return fail(status);
    }
  }

  // The new files are in place; without this the renames themselves may not survive a power
  // cut. A committed write's journal makes them survive it.
  if (commit != nullptr) return absl::OkStatus();
  for (const FileStore* store : stores) {
    if (absl::Status status = store->Step(WriteStep::kSyncFolder); !status.ok()) return status;
    if (absl::Status synced = SyncFolder(store->folder_); !synced.ok()) return synced;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> FileStore::Read(absl::string_view name) const {
  if (!IsValidName(name)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid file name \"", name, "\""));
  }
  return ReadWholeFile(folder_ / std::string(name), /*follow_symlinks=*/false);
}

absl::Status FileStore::Rename(absl::string_view from, absl::string_view to) const {
  if (!IsValidName(from) || !IsValidName(to)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid file name \"", from, "\" or \"", to, "\""));
  }
  std::error_code ec;
  std::filesystem::rename(folder_ / std::string(from), folder_ / std::string(to), ec);
  if (ec) return ErrnoStatus(ec, absl::StrCat("cannot rename ", from, " to ", to, " in"), folder_);
  return absl::OkStatus();
}

absl::StatusOr<size_t> FileStore::RemoveTemporaries() const {
  std::error_code ec;
  std::filesystem::directory_iterator it(folder_, ec);
  if (ec == std::errc::no_such_file_or_directory) return 0;
  if (ec) return ErrnoStatus(ec, "cannot list", folder_);
  size_t removed = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    // symlink_status: a link is not a file a write left, whatever it points to.
    std::error_code status_ec;
    if (!IsTempName(it->path().filename().string()) ||
        !std::filesystem::is_regular_file(it->symlink_status(status_ec))) {
      continue;
    }
    if (::unlink(it->path().c_str()) != 0) {
      if (errno == ENOENT) continue;
      return ErrnoStatus(errno, "cannot remove", it->path());
    }
    ++removed;
  }
  if (ec) return ErrnoStatus(ec, "cannot list", folder_);
  return removed;
}

absl::StatusOr<std::vector<std::string>> FileStore::List() const {
  std::error_code ec;
  std::filesystem::directory_iterator it(folder_, ec);
  if (ec) return ErrnoStatus(ec, "cannot list", folder_);
  std::vector<std::string> names;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!name.starts_with('.')) names.push_back(std::move(name));
  }
  if (ec) return ErrnoStatus(ec, "cannot list", folder_);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace devmgr
