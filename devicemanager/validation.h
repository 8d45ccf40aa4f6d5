// The checks a device plugin's registration passes before the manager dials it, shared by
// Register on kubelet.sock and by the probe-mode handler calls: the API version, the
// extended-resource-name rule, and where the plugin's socket may be. Error texts are
// upstream's where upstream has the check; upstream checks no endpoint and only fails to dial
// a wrong one, so an endpoint refusal begins with its "failed to dial device plugin: ". Pure
// functions, except that the endpoint checks look at the file system (lstat, realpath).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr::devicemanager {

// The only device plugin API version served.
inline constexpr absl::string_view kDevicePluginVersion = "v1beta1";

// CheckRegisterRequest: version, then resource name, in upstream's order and words
// (InvalidArgument).
absl::Status CheckRegisterRequest(absl::string_view version, absl::string_view resource_name);

// CheckProbePlugin: the probe-mode handler's ValidatePlugin (InvalidArgument).
absl::Status CheckProbePlugin(absl::string_view resource_name,
                              const std::vector<std::string>& versions);

// ResolvePluginSocket turns RegisterRequest.endpoint, a file name in `plugin_dir`, into the
// socket path. InvalidArgument for anything that is not a plain file name (empty, ".", "..",
// containing '/'), too long for a socket path or not dialable as it is (CheckDialable);
// FailedPrecondition when something other than a socket is there (a symlink included). Nothing
// there yet is accepted: the dial waits for the socket, as upstream's does.
absl::StatusOr<std::filesystem::path> ResolvePluginSocket(const std::filesystem::path& plugin_dir,
                                                          absl::string_view endpoint);

// ResolveProbeSocket checks a probe-mode endpoint (PluginInfo.endpoint), which, as upstream,
// may be any absolute path naming a unix socket: no NUL bytes, short enough for a socket
// address, dialable as it is (no comma, CheckDialable), and a socket there (symlinks followed,
// as the dial follows them) or nothing yet (the dial waits for one, as upstream's). Returns the
// path lexically normalised. InvalidArgument for a bad path, the errno's code when stat fails
// otherwise than with ENOENT, FailedPrecondition for a file that is not a socket.
absl::StatusOr<std::filesystem::path> ResolveProbeSocket(absl::string_view endpoint);

}  // namespace devmgr::devicemanager
