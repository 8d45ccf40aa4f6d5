#include "devicemanager/validation.h"

#include <sys/stat.h>

#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/errno_status.h"
#include "common/go_quote.h"
#include "common/k8s_names.h"
#include "common/unix_socket.h"

namespace devmgr::devicemanager {
namespace {

// Upstream checks no endpoint: it dials whatever path it is given, and a wrong one fails the
// dial (after its 10 s deadline, as "context deadline exceeded"). Refusals here come at once
// with the reason, and begin the same way, so that plugin authors see the text they know.
constexpr absl::string_view kDialFailed = "failed to dial device plugin: ";

absl::Status CheckSocketThere(const std::filesystem::path& path) {
  if (absl::Status status = ValidateSocketPath(path); !status.ok()) {
    return absl::Status(status.code(), absl::StrCat(kDialFailed, status.message()));
  }
  if (!IsSocket(path)) {
    return absl::FailedPreconditionError(
        absl::StrCat(kDialFailed, path.string(), " is not a unix socket"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckRegisterRequest(absl::string_view version, absl::string_view resource_name) {
  if (version != kDevicePluginVersion) {
    // Upstream formats the version and its list of supported versions with %q.
    return absl::InvalidArgumentError(
        absl::StrCat("requested API version ", GoQuote(version),
                     " is not supported by kubelet. Supported version is [",
                     GoQuote(kDevicePluginVersion), "]"));
  }
  if (!IsExtendedResourceName(resource_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ResourceName ", GoQuote(resource_name), " is invalid"));
  }
  return absl::OkStatus();
}

absl::Status CheckProbePlugin(absl::string_view resource_name,
                              const std::vector<std::string>& versions) {
  bool supported = false;
  for (const auto& version : versions) supported = supported || version == kDevicePluginVersion;
  if (!supported) {
    return absl::InvalidArgumentError(absl::StrCat("manager version, ", kDevicePluginVersion,
                                                   ", is not among plugin supported versions [",
                                                   absl::StrJoin(versions, " "), "]"));
  }
  if (!IsExtendedResourceName(resource_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid name of device plugin socket: the ResourceName ",
                     GoQuote(resource_name), " is invalid"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::filesystem::path> ResolvePluginSocket(const std::filesystem::path& plugin_dir,
                                                          absl::string_view endpoint) {
  // A plain file name cannot leave the folder: no separators, and not "." or "..".
  if (endpoint.empty() || endpoint == "." || endpoint == ".." || absl::StrContains(endpoint, '/') ||
      absl::StrContains(endpoint, '\0')) {
    return absl::InvalidArgumentError(
        absl::StrCat(kDialFailed, "invalid endpoint ", GoQuote(endpoint),
                     ": must be the file name of a socket in ", plugin_dir.string()));
  }
  std::filesystem::path socket = plugin_dir / std::string(endpoint);
  if (absl::Status status = CheckSocketThere(socket); !status.ok()) return status;
  return socket;
}

absl::StatusOr<std::filesystem::path> ResolveProbeSocket(absl::string_view endpoint) {
  // The kernel would stop reading the path at a NUL byte, so the file checked would not be the
  // one dialled.
  if (absl::StrContains(endpoint, '\0')) {
    return absl::InvalidArgumentError(
        absl::StrCat(kDialFailed, "invalid endpoint ", GoQuote(endpoint), ": contains a NUL byte"));
  }
  const std::filesystem::path socket =
      std::filesystem::path(std::string(endpoint)).lexically_normal();
  if (absl::Status status = ValidateSocketPath(socket); !status.ok()) {
    return absl::Status(status.code(), absl::StrCat(kDialFailed, status.message()));
  }
  // stat, not lstat: a dial follows symlinks, and reading the target changes nothing.
  struct stat info {};
  if (::stat(socket.c_str(), &info) != 0) {
    // Not there yet (a plugin that starts its registration server before its service): the
    // dial waits for it, as upstream's blocking dial does, for as long as its timeout.
    if (errno == ENOENT) return socket;
    const absl::Status status = ErrnoStatus(errno, "cannot stat", socket);
    return absl::Status(status.code(), absl::StrCat(kDialFailed, status.message()));
  }
  if (!S_ISSOCK(info.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(kDialFailed, socket.string(), " is not a unix socket"));
  }
  return socket;
}

}  // namespace devmgr::devicemanager
