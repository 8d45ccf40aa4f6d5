#include "plugins/generic/sysfs_numa.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/errno_status.h"
#include "common/file_store.h"
#include "plugins/generic/nvidia_gpus.h"

namespace devmgr::plugins {
namespace {

absl::StatusOr<std::optional<int64_t>> ReadNumaNode(const std::filesystem::path& file) {
  absl::StatusOr<std::string> text = ReadWholeFile(file);
  if (!text.ok()) return text.status();
  int64_t node = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &node) || node < -1) {
    return absl::FailedPreconditionError(absl::StrCat(file.string(), " holds \"",
                                                      absl::StripAsciiWhitespace(*text),
                                                      "\", not a NUMA node number"));
  }
  if (node == -1) return std::nullopt;
  return node;
}

// IsBelow: whether `folder` lies inside `root` (and is not `root` itself); both canonical.
bool IsBelow(const std::filesystem::path& folder, const std::filesystem::path& root) {
  const std::filesystem::path relative = folder.lexically_relative(root);
  return !relative.empty() && relative != "." && *relative.begin() != "..";
}

}  // namespace

absl::StatusOr<std::optional<int64_t>> NumaNodeOf(const std::filesystem::path& node,
                                                  const std::filesystem::path& sys_root,
                                                  const std::filesystem::path& proc_root) {
  struct stat st {};
  if (::stat(node.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) return std::nullopt;
  std::error_code ec;
  const std::filesystem::path root = std::filesystem::canonical(sys_root, ec);
  if (ec) return ErrnoStatus(ec, "cannot resolve the sysfs folder", sys_root);
  std::filesystem::path folder = std::filesystem::canonical(
      sys_root / "dev" / "char" / absl::StrCat(major(st.st_rdev), ":", minor(st.st_rdev)), ec);
  if (ec) {
    // No device registered behind this number; an NVIDIA GPU's node is one, found in procfs.
    absl::StatusOr<std::optional<std::string>> pci = NvidiaGpuPciAddress(st.st_rdev, proc_root);
    if (!pci.ok()) return pci.status();
    if (!pci->has_value()) return std::nullopt;
    folder = std::filesystem::canonical(sys_root / "bus" / "pci" / "devices" / **pci, ec);
    if (ec) return std::nullopt;
  }
  // Up the device tree, staying inside sysfs: the nearest numa_node is the device's.
  for (; IsBelow(folder, root); folder = folder.parent_path()) {
    const std::filesystem::path file = folder / "numa_node";
    if (std::filesystem::exists(file, ec)) {
      absl::StatusOr<std::optional<int64_t>> numa = ReadNumaNode(file);
      // Gone between the two looks (the device unplugged meanwhile): no topology.
      if (absl::IsNotFound(numa.status())) return std::nullopt;
      return numa;
    }
  }
  return std::nullopt;
}

}  // namespace devmgr::plugins
