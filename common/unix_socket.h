// Unix domain socket paths: validation, gRPC targets, and removing stale sockets without ever
// touching anything that is not a socket (a checkpoint, a folder, a symlink's target).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace devmgr {

// sun_path holds 108 bytes including the terminating NUL.
inline constexpr size_t kMaxUnixSocketPathBytes = 107;

// ValidateSocketAddress: InvalidArgument unless `path` is absolute and at most
// kMaxUnixSocketPathBytes long: enough for a socket served and dialled without gRPC (the
// metrics server and its scrape).
absl::Status ValidateSocketAddress(const std::filesystem::path& path);

// ValidateSocketPath: ValidateSocketAddress, and dialable through gRPC (CheckDialable).
absl::Status ValidateSocketPath(const std::filesystem::path& path);

// CheckDialable: InvalidArgument if `path` holds a ','. gRPC's unix resolver reads the path as a
// list of addresses split at commas, so "/p/a.sock,b" would dial /p/a.sock: another socket, not
// this one. Percent-encoding does not help, as the split comes after decoding.
absl::Status CheckDialable(const std::filesystem::path& path);

// UnixTarget is the gRPC target for a socket path, absolute or relative to the working folder:
// "unix:" + the path, with '%', '?' and '#' percent-encoded so that gRPC's URI parsing gives
// back the path as it is. It serves both to listen and to dial at any path of up to
// kMaxUnixSocketPathBytes.
std::string UnixTarget(const std::filesystem::path& path);

// IsSocket: `path` itself (not a symlink's target) is a unix socket.
bool IsSocket(const std::filesystem::path& path);

// ConnectError: the errno of a connection to the socket at `path` (made and closed at once): 0
// when a process accepts connections there (a full backlog counts), ECONNREFUSED for a socket
// left by a process that is gone, ENOENT when nothing is there, EINVAL for a path that is not
// absolute, longer than a socket address holds, or holds a ',' (ValidateSocketPath).
int ConnectError(const std::filesystem::path& path);

// SomeoneListens: `path` itself is a socket (not a symlink) that a process accepts connections
// on; false for a socket left by a process that is gone, or no socket.
bool SomeoneListens(const std::filesystem::path& path);

// NobodyServes: OK when no process accepts stream connections on `path`: nothing is there,
// something that is not a socket, a socket its process left, a socket of another type (datagram,
// seqpacket: no gRPC server), or a path no socket address holds.
// AlreadyExists "a process serves <path>" when one does, and the error of the look or the
// connection (PermissionDenied for EACCES, say) when it fails otherwise, since then no one can
// tell.
absl::Status NobodyServes(const std::filesystem::path& path);

// ListenUnix binds a stream socket at `path` (ValidateSocketAddress) and listens on it; the
// descriptor, which the caller owns, is non-blocking and closed on exec. With `owner_only` the
// socket file is set to 0600 between the bind and the listen: no one can connect before the
// listen, so no one but the process's user ever can, and the process's umask is not changed
// (another thread may be creating files). An error names the step that failed.
absl::StatusOr<int> ListenUnix(const std::filesystem::path& path, bool owner_only = false);

// RemoveStaleSocket deletes `path` if it is a socket; OK if it does not exist.
// FailedPrecondition if something else (a file, a folder, a symlink) is there.
absl::Status RemoveStaleSocket(const std::filesystem::path& path);

// TemporarySocketPath names a socket beside `path`, "." and 12 hex digits, random and apart from
// this process's other names, starting with "." so that plugin watchers skip it: bind there,
// then MoveSocketInto `path`. A server bound so never unlinks `path` when it stops (gRPC unlinks
// the path it bound), so it cannot remove a socket another process has since put at `path`.
// Where the folder leaves less room under kMaxUnixSocketPathBytes, the name has fewer digits,
// down to kMinTemporarySocketDigits: a path that fits has a temporary name that fits unless its
// own name is shorter than that.
inline constexpr size_t kTemporarySocketDigits = 12;
inline constexpr size_t kMinTemporarySocketDigits = 4;
std::filesystem::path TemporarySocketPath(const std::filesystem::path& path);

// MoveSocketInto renames the socket `bound` onto `path` in one step, replacing a socket there
// (never a moment without one). FailedPrecondition, `bound` left, if something that is not a
// socket is at `path`.
absl::Status MoveSocketInto(const std::filesystem::path& bound, const std::filesystem::path& path);

// RemoveSocketsIn deletes the sockets directly inside `folder` and leaves everything else;
// returns the first error, after trying them all.
absl::Status RemoveSocketsIn(const std::filesystem::path& folder);

}  // namespace devmgr
