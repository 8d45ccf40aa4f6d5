#include "common/placed_socket.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/unix_socket.h"

namespace devmgr {

PlacedSocket::PlacedSocket(std::filesystem::path path)
    : path_(std::move(path)), bind_path_(TemporarySocketPath(path_)) {}

absl::Status PlacedSocket::Check() const {
  if (absl::Status path = ValidateSocketPath(path_); !path.ok()) return path;
  if (ValidateSocketPath(bind_path_).ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "socket path ", path_.string(), " leaves no room to bind first under a hidden name of ",
      kMinTemporarySocketDigits + 1, " characters beside it (", kMaxUnixSocketPathBytes,
      " bytes at most); a longer socket name or a shorter folder gives it room"));
}

absl::Status PlacedSocket::Place() {
  const std::optional<FileId> bound = StatId(bind_path_);
  if (absl::Status moved = MoveSocketInto(bind_path_, path_); !moved.ok()) return moved;
  // Taken again at the path: the rename changed the time in the id.
  const std::optional<FileId> placed = StatId(path_);
  if (!bound.has_value() || !placed.has_value() || !placed->Same(*bound)) {
    return absl::AbortedError(
        absl::StrCat("another process replaced the socket just moved to ", path_.string()));
  }
  id_ = placed;
  return absl::OkStatus();
}

absl::Status PlacedSocket::Remove() {
  // The same file, whatever changed its time since (a chmod, a chown): while our server held
  // it, no other socket could have its inode.
  const std::optional<FileId> now = StatId(path_);
  const bool ours = id_.has_value() && now.has_value() && now->Same(*id_) && IsSocket(path_);
  id_.reset();
  return ours ? RemoveStaleSocket(path_) : absl::OkStatus();
}

}  // namespace devmgr
