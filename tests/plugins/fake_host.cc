#include "tests/plugins/fake_host.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fstream>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "tests/plugins/examples_dir.h"

namespace devmgr::testing {
namespace {

constexpr const char* kPciBuses[] = {"pci0000:00", "pci0000:80"};
constexpr const char* kPciAddresses[] = {"0000:00:04.0", "0000:80:04.0"};
constexpr const char* kStandIns[] = {"/dev/null", "/dev/zero"};

dev_t DeviceNumber(const char* device) {
  struct stat st {};
  if (::stat(device, &st) != 0 || !S_ISCHR(st.st_mode)) {
    throw std::runtime_error(absl::StrCat(device, " is not a character device here"));
  }
  return st.st_rdev;
}

}  // namespace

FakeGpuHost::FakeGpuHost(const std::filesystem::path& root)
    : dev_root_(root / "host"), sys_root_(root / "sys"), proc_root_(root / "proc") {
  namespace fs = std::filesystem;
  fs::create_directories(dev_root_ / "dev");
  fs::create_directories(sys_root_ / "dev" / "char");
  fs::create_directories(sys_root_ / "bus" / "pci" / "devices");
  fs::create_directories(proc_root_);
  for (const char* shared : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"}) {
    std::ofstream(dev_root_ / "dev" / shared) << "";
  }
  // Both stand-ins are memory devices of one major, which the fake driver takes for its own.
  std::ofstream(proc_root_ / "devices")
      << "Character devices:\n  1 mem\n"
      << major(DeviceNumber(kStandIns[0]))
      << " nvidia\n195 nvidiactl\n238 nvidia-uvm\n\nBlock devices:\n  7 loop\n";
  for (int gpu = 0; gpu < 2; ++gpu) {
    const std::string name = absl::StrCat("nvidia", gpu);
    fs::create_symlink(kStandIns[gpu], dev_root_ / "dev" / name);
    const fs::path function = fs::path("devices") / kPciBuses[gpu] / kPciAddresses[gpu];
    fs::create_directories(sys_root_ / function);
    std::ofstream(NumaNodeFile(gpu)) << gpu << "\n";
    fs::create_symlink(fs::path("..") / ".." / ".." / function,
                       sys_root_ / "bus" / "pci" / "devices" / kPciAddresses[gpu]);
    fs::create_directories(InformationFile(gpu).parent_path());
    std::ofstream(InformationFile(gpu))
        << "Model: \t\t NVIDIA H200\nBus Location: \t " << kPciAddresses[gpu]
        << "\nDevice Minor: \t " << minor(DeviceNumber(kStandIns[gpu])) << "\nGPU Excluded:\t No\n";
  }
}

std::filesystem::path FakeGpuHost::NumaNodeFile(int gpu) const {
  return sys_root_ / "devices" / kPciBuses[gpu] / kPciAddresses[gpu] / "numa_node";
}

std::filesystem::path FakeGpuHost::InformationFile(int gpu) const {
  return proc_root_ / "driver" / "nvidia" / "gpus" / kPciAddresses[gpu] / "information";
}

std::filesystem::path ExamplePath(const std::string& name) {
  return std::filesystem::path(DEVMGR_GENERIC_EXAMPLES_DIR) / name;
}

}  // namespace devmgr::testing
