#include "common/unix_socket.h"

#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/errno_status.h"

namespace devmgr {

namespace {

// SocketAt: whether a socket is at `path` (false: nothing is); FailedPrecondition, `verb`
// naming what is not done, when something else is there.
absl::StatusOr<bool> SocketAt(const std::filesystem::path& path, absl::string_view verb) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return false;
    return ErrnoStatus(errno, "cannot stat", path);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path.string(), " exists and is not a socket; not ", verb, " it"));
  }
  return true;
}

}  // namespace

absl::Status ValidateSocketAddress(const std::filesystem::path& path) {
  if (!path.is_absolute()) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket path must be absolute: \"", path.string(), "\""));
  }
  if (path.native().size() > kMaxUnixSocketPathBytes) {
    return absl::InvalidArgumentError(absl::StrCat("socket path is ", path.native().size(),
                                                   " bytes, over the limit of ",
                                                   kMaxUnixSocketPathBytes, ": ", path.string()));
  }
  return absl::OkStatus();
}

absl::Status ValidateSocketPath(const std::filesystem::path& path) {
  if (absl::Status address = ValidateSocketAddress(path); !address.ok()) return address;
  return CheckDialable(path);
}

absl::Status CheckDialable(const std::filesystem::path& path) {
  if (path.native().find(',') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket path \"", path.string(),
                     "\" contains ',', which gRPC reads as a separator between addresses"));
  }
  return absl::OkStatus();
}

std::string UnixTarget(const std::filesystem::path& path) {
  // "unix:/abs", not "unix:///abs": gRPC's server measures what follows "unix:" against the
  // socket address's 107 bytes, so the longer form could not listen at a path of 106 or 107.
  // Leading slashes beyond the first name the same folder and go: "unix://run" would read
  // "run" as an authority.
  std::string_view rest = path.native();
  while (rest.starts_with("//")) rest.remove_prefix(1);
  std::string target = "unix:";
  for (const char c : rest) {
    // gRPC parses the target as a URI: it decodes %XX in the path and ends it at '?' or '#'.
    if (c == '%' || c == '?' || c == '#') {
      constexpr char kHex[] = "0123456789ABCDEF";
      const auto byte = static_cast<unsigned char>(c);
      target += {'%', kHex[byte >> 4], kHex[byte & 0xF]};
    } else {
      target += c;
    }
  }
  return target;
}

bool IsSocket(const std::filesystem::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

int ConnectError(const std::filesystem::path& path) {
  if (!ValidateSocketPath(path).ok()) return EINVAL;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return errno;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path.string().copy(address.sun_path, sizeof(address.sun_path) - 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API takes sockaddr*
  const int connected = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  const int error = connected == 0 ? 0 : errno;
  ::close(fd);
  // A full backlog (EAGAIN) is a listener too.
  return error == EAGAIN || error == EINPROGRESS ? 0 : error;
}

bool SomeoneListens(const std::filesystem::path& path) {
  return IsSocket(path) && ConnectError(path) == 0;
}

absl::Status NobodyServes(const std::filesystem::path& path) {
  constexpr absl::string_view kCannotTell = "cannot tell whether a process serves";
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return absl::OkStatus();
    return ErrnoStatus(errno, kCannotTell, path);  // a folder this process may not search
  }
  if (!S_ISSOCK(st.st_mode)) return absl::OkStatus();
  const int error = ConnectError(path);
  if (error == 0) {
    return absl::AlreadyExistsError(absl::StrCat("a process serves ", path.string()));
  }
  // EINVAL: a path no socket address holds, so no process serves it under that name.
  // EPROTOTYPE: a socket of another type (datagram, seqpacket), which no gRPC server is.
  if (error == ECONNREFUSED || error == ENOENT || error == EINVAL || error == EPROTOTYPE) {
    return absl::OkStatus();
  }
  return ErrnoStatus(error, kCannotTell, path);
}

std::filesystem::path TemporarySocketPath(const std::filesystem::path& path) {
  // Random rather than the pid alone: plugins and drivers in containers are all pid 1, and gRPC
  // unlinks whatever socket is at a path before it binds there. The count added to this
  // process's random start keeps its own names apart, however few digits there are room for;
  // the pid mixed in makes a forked child's unlikely to meet its parent's.
  static const uint64_t start = [] {
    uint64_t bits = 0;
    if (::getrandom(&bits, sizeof(bits), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(bits))) {
      bits =
          static_cast<uint64_t>(::getpid()) ^ static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
    }
    return bits;
  }();
  static std::atomic<uint64_t> next{0};
  const std::filesystem::path folder = path.parent_path();
  // As many digits as fit beside the folder under the limit (after the '/' and the '.').
  const size_t used = (folder / "").native().size() + 1;
  const size_t room = used < kMaxUnixSocketPathBytes ? kMaxUnixSocketPathBytes - used : 0;
  const size_t digits = std::clamp(room, kMinTemporarySocketDigits, kTemporarySocketDigits);
  const uint64_t mask = (uint64_t{1} << (4 * digits)) - 1;
  const uint64_t pid = static_cast<uint64_t>(::getpid()) * 0x9E3779B97F4A7C15;  // odd: a bijection
  return folder /
         absl::StrFormat(".%0*x", static_cast<int>(digits), ((start ^ pid) + next++) & mask);
}

absl::Status MoveSocketInto(const std::filesystem::path& bound, const std::filesystem::path& path) {
  if (absl::StatusOr<bool> socket = SocketAt(path, "replacing"); !socket.ok()) {
    return socket.status();
  }
  if (::rename(bound.c_str(), path.c_str()) != 0) {
    return ErrnoStatus(errno, "cannot move the socket to", path);
  }
  return absl::OkStatus();
}

absl::Status RemoveStaleSocket(const std::filesystem::path& path) {
  absl::StatusOr<bool> socket = SocketAt(path, "removing");
  if (!socket.ok()) return socket.status();
  if (!*socket) return absl::OkStatus();
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus(errno, "cannot remove", path);
  }
  return absl::OkStatus();
}

absl::StatusOr<int> ListenUnix(const std::filesystem::path& path, bool owner_only) {
  if (absl::Status valid = ValidateSocketAddress(path); !valid.ok()) return valid;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return ErrnoStatus(errno, "cannot create a socket for", path);
  const auto fail = [&](absl::string_view step) {
    const int error = errno;
    ::close(fd);
    return ErrnoStatus(error, step, path);
  };
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path.string().copy(address.sun_path, sizeof(address.sun_path) - 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API takes sockaddr*
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return fail("cannot bind");
  }
  const auto fail_bound = [&](absl::string_view step) {
    const absl::Status failed = fail(step);
    ::unlink(path.c_str());
    return failed;
  };
  // Before the listen, while a connection is refused whatever the file's mode.
  if (owner_only && ::chmod(path.c_str(), 0600) != 0) return fail_bound("cannot set the mode of");
  if (::listen(fd, SOMAXCONN) != 0) return fail_bound("cannot listen on");
  return fd;
}

absl::Status RemoveSocketsIn(const std::filesystem::path& folder) {
  std::error_code ec;
  std::filesystem::directory_iterator it(folder, ec);
  if (ec) return ErrnoStatus(ec, "cannot list", folder);
  absl::Status first_error;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (!IsSocket(it->path())) continue;
    absl::Status status = RemoveStaleSocket(it->path());
    if (first_error.ok()) first_error = status;
  }
  if (ec && first_error.ok()) {
    first_error = ErrnoStatus(ec, "cannot list", folder);
  }
  return first_error;
}

}  // namespace devmgr
