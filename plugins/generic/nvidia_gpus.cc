#include "plugins/generic/nvidia_gpus.h"

#include <sys/sysmacros.h>

#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/errno_status.h"
#include "common/file_store.h"

namespace devmgr::plugins {
namespace {

// IsNvidiaGpuMajor: whether <proc>/devices lists `major` among the character devices as the
// NVIDIA driver's GPU major. A missing or unreadable list means no driver to ask: false.
bool IsNvidiaGpuMajor(unsigned int number, const std::filesystem::path& proc_root) {
  absl::StatusOr<std::string> devices = ReadWholeFile(proc_root / "devices");
  if (!devices.ok()) return false;
  bool character = false;
  for (absl::string_view line : absl::StrSplit(*devices, '\n')) {
    if (absl::StartsWith(line, "Character devices:")) {
      character = true;
      continue;
    }
    if (absl::StartsWith(line, "Block devices:")) character = false;
    if (!character) continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    unsigned int listed = 0;
    if (fields.size() == 2 && absl::SimpleAtoi(fields[0], &listed) && listed == number &&
        (fields[1] == "nvidia" || fields[1] == "nvidia-frontend")) {
      return true;
    }
  }
  return false;
}

// DeviceMinor: the "Device Minor" an `information` file gives; nullopt when it has no such line.
absl::StatusOr<std::optional<unsigned int>> DeviceMinor(const std::filesystem::path& file) {
  absl::StatusOr<std::string> text = ReadWholeFile(file);
  if (!text.ok()) return text.status();
  constexpr absl::string_view kKey = "Device Minor:";
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (!absl::StartsWith(line, kKey)) continue;
    const absl::string_view value = absl::StripAsciiWhitespace(line.substr(kKey.size()));
    unsigned int minor = 0;
    if (!absl::SimpleAtoi(value, &minor)) {
      return absl::FailedPreconditionError(
          absl::StrCat(file.string(), " gives the device minor \"", value, "\", not a number"));
    }
    return minor;
  }
  return std::nullopt;
}

}  // namespace

std::optional<unsigned int> NvidiaGpuMinor(dev_t device, const std::filesystem::path& proc_root) {
  if (!IsNvidiaGpuMajor(major(device), proc_root)) return std::nullopt;
  return minor(device);
}

absl::StatusOr<std::optional<std::string>> NvidiaGpuPciAddress(
    dev_t device, const std::filesystem::path& proc_root) {
  const std::optional<unsigned int> gpu_minor = NvidiaGpuMinor(device, proc_root);
  if (!gpu_minor.has_value()) return std::nullopt;
  const std::filesystem::path gpus = proc_root / "driver" / "nvidia" / "gpus";
  std::error_code ec;
  std::filesystem::directory_iterator it(gpus, ec);
  if (ec) return std::nullopt;  // a driver without GPUs, or no driver folder
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    absl::StatusOr<std::optional<unsigned int>> listed = DeviceMinor(it->path() / "information");
    // A GPU gone between the listing and the read (unbound meanwhile) names none.
    if (absl::IsNotFound(listed.status())) continue;
    if (!listed.ok()) return listed.status();
    if (*listed == gpu_minor) return it->path().filename().string();
  }
  if (ec) return ErrnoStatus(ec, "cannot list", gpus);
  return std::nullopt;
}

}  // namespace devmgr::plugins
