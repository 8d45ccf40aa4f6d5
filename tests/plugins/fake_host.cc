#include "tests/plugins/fake_host.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fstream>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "tests/plugins/examples_dir.h"

namespace devmgr::testing {
namespace {

constexpr const char* kPciFunctions[] = {"pci0000:00/0000:00:04.0", "pci0000:80/0000:80:04.0"};
constexpr const char* kStandIns[] = {"/dev/null", "/dev/zero"};

std::string MajorMinor(const char* device) {
  struct stat st {};
  if (::stat(device, &st) != 0 || !S_ISCHR(st.st_mode)) {
    throw std::runtime_error(absl::StrCat(device, " is not a character device here"));
  }
  return absl::StrCat(major(st.st_rdev), ":", minor(st.st_rdev));
}

}  // namespace

FakeGpuHost::FakeGpuHost(const std::filesystem::path& root)
    : dev_root_(root / "host"), sys_root_(root / "sys") {
  namespace fs = std::filesystem;
  fs::create_directories(dev_root_ / "dev");
  fs::create_directories(sys_root_ / "dev" / "char");
  for (const char* shared : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"}) {
    std::ofstream(dev_root_ / "dev" / shared) << "";
  }
  for (int gpu = 0; gpu < 2; ++gpu) {
    const std::string name = absl::StrCat("nvidia", gpu);
    fs::create_symlink(kStandIns[gpu], dev_root_ / "dev" / name);
    const fs::path function = fs::path("devices") / kPciFunctions[gpu];
    fs::create_directories(sys_root_ / function / "gpu" / name);
    std::ofstream(NumaNodeFile(gpu)) << gpu << "\n";
    fs::create_symlink(fs::path("..") / ".." / function / "gpu" / name,
                       sys_root_ / "dev" / "char" / MajorMinor(kStandIns[gpu]));
  }
}

std::filesystem::path FakeGpuHost::NumaNodeFile(int gpu) const {
  return sys_root_ / "devices" / kPciFunctions[gpu] / "numa_node";
}

std::filesystem::path ExamplePath(const std::string& name) {
  return std::filesystem::path(DEVMGR_GENERIC_EXAMPLES_DIR) / name;
}

}  // namespace devmgr::testing
