// ErrnoStatus: the one way an environment error from a failed system call (a missing folder, a
// full disk, a permission, a busy lock) becomes an absl::Status. The code comes from the errno
// value, as absl::ErrnoToStatus maps it, so that a caller can act on it (NotFound, AlreadyExists,
// PermissionDenied, ResourceExhausted for a full disk, Unavailable for EAGAIN, ...); Internal is
// left for broken invariants, never for the environment. The message is "<what>: <strerror>",
// the text the tools print.
#pragma once

#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace devmgr {

// ErrnoStatus: `error_number` (an errno value) with `what` happened, e.g.
// ErrnoStatus(errno, "cannot open lock file /x/devmgr.lock"). One exception to absl's mapping:
// ELOOP, which O_NOFOLLOW answers for a symlink where a plain file must be, is
// FailedPrecondition (absl: Unknown).
absl::Status ErrnoStatus(int error_number, absl::string_view what);

// The same for "<what> <path>", the usual shape: ErrnoStatus(errno, "cannot stat", path).
absl::Status ErrnoStatus(int error_number, absl::string_view what,
                         const std::filesystem::path& path);

// The same for a std::filesystem error, whose value is an errno value.
absl::Status ErrnoStatus(const std::error_code& error, absl::string_view what,
                         const std::filesystem::path& path);

}  // namespace devmgr
