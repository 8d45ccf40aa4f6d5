// The file names of a DRA driver's sockets, as upstream's driver helper
// (k8s.io/dynamic-resource-allocation/kubeletplugin) chooses them, so that a driver built on
// devmgr is found where the kubelet, and the operator, expect one:
//
//  * the service socket, in the driver's data folder (/var/lib/kubelet/plugins/<driver>):
//    "dra.sock", or "dra-<pod uid>.sock" in a rolling update, where the old and the new pod of
//    the driver run side by side;
//  * the registration socket, in the kubelet's plugins_registry/: "<driver>-reg.sock", or in a
//    rolling update the first of these names whose path fits a unix socket (kUnixPathMax):
//    "<driver>-<pod uid>-reg.sock", "<driver>-<8 bytes of the uid's hash>-reg.sock",
//    "dra-<16 bytes of the hash of driver, NUL, uid>-reg.sock" (SHA-256, the bytes in URL-safe
//    base64 without padding); the last one even if it does not fit.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace devmgr::kubeletplugin {

// The longest socket path a name is chosen to fit: 107 bytes, sun_path's 108 with the NUL (the
// limit of devmgr's sockets). Go binds 108 bytes without one, so where upstream's name is
// exactly 108 bytes long, devmgr takes the next, shorter form.
inline constexpr size_t kUnixPathMax = 107;

// IsValidDriverName: a driver name as the API validates one (CheckDriverName: at most 63
// characters, a DNS subdomain once lower-cased). Names become folder and file names: this also
// keeps '/' and ".." out of them.
bool IsValidDriverName(absl::string_view name);

// IsValidPodUid: a pod UID for a rolling update's socket names: letters, digits and '-', at most
// 63 characters.
bool IsValidPodUid(absl::string_view uid);

// CheckNames: InvalidArgument, saying what is wanted, unless the driver name is valid and the
// pod UID is empty (no rolling update) or valid.
absl::Status CheckNames(absl::string_view driver_name, absl::string_view pod_uid);

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
