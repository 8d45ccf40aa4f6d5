// What a failed look at kubelet.sock says about the kubelet. Internal to the SDK (not installed):
// Plugin's re-registration check (plugin.cc) acts on it, and the tests check it directly, since
// a transient error of statx cannot be provoked on demand.
#pragma once

#include <cerrno>

namespace devmgr::deviceplugin {

enum class KubeletSocketStatError {
  // Nothing is at the path: no kubelet, and the next kubelet.sock is a new one's.
  kGone,
  // statx itself is refused (a kernel older than statx, or a seccomp profile): lstat tells.
  kNoStatx,
  // Neither (ENOMEM, EINTR, EACCES, EIO, ...): nothing is known, and nothing changes until a
  // check can tell.
  kUnknown,
};

// ClassifyKubeletSocketStatError: what `error_number`, the errno of a failed statx (or lstat) of
// kubelet.sock, says. Only an error that means no file is at the path counts as the kubelet gone.
inline KubeletSocketStatError ClassifyKubeletSocketStatError(int error_number) {
  switch (error_number) {
    case ENOENT:   // no such file
    case ENOTDIR:  // a folder on the path is a file now
    case ELOOP:    // a symlink loop on the path: nothing can be reached there
      return KubeletSocketStatError::kGone;
    case ENOSYS:
    case EPERM:
      return KubeletSocketStatError::kNoStatx;
    default:
      return KubeletSocketStatError::kUnknown;
  }
}

}  // namespace devmgr::deviceplugin
