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

// CheckDialTarget: `path` can be dialled as it is (ValidateSocketPath), and a unix socket is
// there or nothing is yet. A plugin may ask to be registered a moment before its service
// listens; the dial waits for the socket for as long as its timeout, as upstream's blocking dial
// does. `follow_symlinks` says whether a symlink there is dialled where it points (a probe-mode
// endpoint, any path, as upstream) or refused (a name in the plugin folder, where only the
// plugins' own sockets belong).
absl::Status CheckDialTarget(const std::filesystem::path& path, bool follow_symlinks) {
  if (absl::Status status = ValidateSocketPath(path); !status.ok()) {
    return absl::Status(status.code(), absl::StrCat(kDialFailed, status.message()));
  }
  struct stat info {};
  if ((follow_symlinks ? ::stat(path.c_str(), &info) : ::lstat(path.c_str(), &info)) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    const absl::Status status = ErrnoStatus(errno, "cannot stat", path);
    return absl::Status(status.code(), absl::StrCat(kDialFailed, status.message()));
  }
  if (!S_ISSOCK(info.st_mode)) {
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
  if (absl::Status status = CheckDialTarget(socket, /*follow_symlinks=*/false); !status.ok()) {
    return status;
  }
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
  if (absl::Status status = CheckDialTarget(socket, /*follow_symlinks=*/true); !status.ok()) {
    return status;
  }
  return socket;
}

}  // namespace devmgr::devicemanager
