// The file names of a DRA driver's sockets, as upstream's driver helper
// (k8s.io/dynamic-resource-allocation/kubeletplugin) chooses them, so that a driver built on
// devmgr is found where the kubelet, and the operator, expect one:
//
//  * the service socket, in the driver's data folder (/var/lib/kubelet/plugins/<driver>):
//    "dra.sock", or "dra-<pod uid>.sock" in a rolling update, where the old and the new pod of
//    the driver run side by side;
//  * the registration socket, in the kubelet's plugins_registry/: "<driver>-reg.sock", or in a
//    rolling update the first of these names whose path fits a unix socket (108 bytes):
//    "<driver>-<pod uid>-reg.sock", "<driver>-<8 bytes of the uid's hash>-reg.sock",
//    "dra-<16 bytes of the hash of driver, NUL, uid>-reg.sock" (SHA-256, the bytes in URL-safe
//    base64 without padding); the last one even if it does not fit.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "absl/strings/string_view.h"

namespace devmgr::kubeletplugin {

// sizeof(sockaddr_un::sun_path) on Linux: the longest socket path upstream accepts.
inline constexpr size_t kUnixPathMax = 108;

inline constexpr char kServiceSocketFile[] = "dra.sock";

// RegistrarSocketFile: "<driver>-reg.sock".
std::string RegistrarSocketFile(absl::string_view driver_name);

// RollingUpdateServiceSocketFile: "dra-<pod uid>.sock".
std::string RollingUpdateServiceSocketFile(absl::string_view pod_uid);

// RollingUpdateRegistrarSocketFile: the registration socket's file name for the driver's pod
// `pod_uid` in `registry_dir` (see above). Deterministic; distinct drivers or pods get distinct
// names.
std::string RollingUpdateRegistrarSocketFile(const std::filesystem::path& registry_dir,
                                             absl::string_view driver_name,
                                             absl::string_view pod_uid);

}  // namespace devmgr::kubeletplugin
