// Which PCI function an NVIDIA GPU's device node stands for, as the NVIDIA driver says in procfs.
//
// The driver makes /dev/nvidiaN with mknod and registers no device for it, so sysfs has no
// /sys/dev/char entry to follow (sysfs_numa.h). It names its GPUs in procfs instead:
// <proc>/devices lists the character major it registered, as "nvidia" (the open kernel modules)
// or "nvidia-frontend" (the proprietary ones before them), and each GPU has a folder
// <proc>/driver/nvidia/gpus/<PCI address>/ whose `information` file says, among other lines,
// "Device Minor: \t N": the minor of its /dev/nvidiaN. nvidiactl shares the major (minor 255)
// but is no GPU; nvidia-uvm has a major of its own.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace devmgr::plugins {

// NvidiaGpuMinor: the minor of `device` (stat's st_rdev) when <proc_root>/devices lists its major
// as the NVIDIA driver's GPU major; nullopt otherwise (another driver's node, or no NVIDIA driver
// loaded). /dev/nvidiactl's 255 is given too: it is no GPU, and no GPU has that minor.
std::optional<unsigned int> NvidiaGpuMinor(dev_t device, const std::filesystem::path& proc_root);

// NvidiaGpuPciAddress: the PCI address ("0000:65:00.0") of the NVIDIA GPU whose device node has
// the number `device` (stat's st_rdev), according to the procfs mounted at `proc_root`. nullopt
// when the NVIDIA driver did not register that major (or no driver is loaded), or no GPU it
// lists has that minor. An error naming the file when an `information` file cannot be read, or
// its "Device Minor" is not a number. Blocks on file I/O.
absl::StatusOr<std::optional<std::string>> NvidiaGpuPciAddress(
    dev_t device, const std::filesystem::path& proc_root);

}  // namespace devmgr::plugins
