// The NUMA node of a character device, as the kernel publishes it in sysfs.
//
// A device node's major:minor (from stat, following symlinks) names its sysfs folder,
// <sys root>/dev/char/<major>:<minor>. That folder, or the nearest one above it that has a
// numa_node file, says which node the device hangs off: the PCI function for a DRM render node
// (/sys/dev/char/226:128 -> .../0000:65:00.0/drm/renderD128), the USB host controller for a
// serial adapter. "-1" is the kernel's "no NUMA information".
//
// Drivers that make their nodes with mknod instead of registering a device have no
// /sys/dev/char entry. The NVIDIA driver's /dev/nvidiaN are such nodes: for them the walk starts
// from <sys root>/bus/pci/devices/<PCI address>, the GPU's PCI function, which the driver names
// in procfs (nvidia_gpus.h). Other such nodes get no NUMA node here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "absl/status/statusor.h"

namespace devmgr::plugins {

// NumaNodeOf: the NUMA node of the device node at `node` (a path on this machine) according to
// the sysfs mounted at `sys_root` (and, for an NVIDIA GPU, the procfs at `proc_root`). nullopt
// when the kernel does not say: `node` is missing or not a character device, sysfs has no folder
// for it, no folder from there up has numa_node, or it holds -1. An error naming the file when a
// numa_node exists but cannot be read, or holds anything but an integer >= -1 (or when the
// NVIDIA driver's file about a GPU cannot be read). Blocks on file I/O.
absl::StatusOr<std::optional<int64_t>> NumaNodeOf(const std::filesystem::path& node,
                                                  const std::filesystem::path& sys_root,
                                                  const std::filesystem::path& proc_root);

}  // namespace devmgr::plugins
