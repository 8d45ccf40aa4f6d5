#include "common/errno_status.h"

#include <cerrno>

#include "absl/strings/str_cat.h"

namespace devmgr {

absl::Status ErrnoStatus(int error_number, absl::string_view what) {
  absl::Status status = absl::ErrnoToStatus(error_number, what);
  if (error_number == ELOOP) return absl::FailedPreconditionError(status.message());
  return status;
}

absl::Status ErrnoStatus(int error_number, absl::string_view what,
                         const std::filesystem::path& path) {
  return ErrnoStatus(error_number, absl::StrCat(what, " ", path.string()));
}

absl::Status ErrnoStatus(const std::error_code& error, absl::string_view what,
                         const std::filesystem::path& path) {
  return ErrnoStatus(error.value(), what, path);
}

}  // namespace devmgr
