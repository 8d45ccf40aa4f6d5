// FakeGpuHost: folders that look like a node with two NVIDIA GPUs to `devmgr plugin generic`
// run with --dev-root <root>/host --sys-root <root>/sys --proc-root <root>/proc, so that tests
// need no hardware. As on a real node, sysfs has no /dev/char entry for the GPU nodes (the driver
// makes them with mknod); the driver names each GPU's PCI function in procfs.
//
//   host/dev/nvidia0 -> /dev/null   the GPU nodes are symlinks to real character devices, since
//   host/dev/nvidia1 -> /dev/zero   a test cannot mknod; stat() gives their major:minor
//   host/dev/nvidiactl, nvidia-uvm, nvidia-uvm-tools   plain files: shared nodes only need to exist
//   proc/devices                    "Character devices:" with the stand-ins' major as "nvidia"
//   proc/driver/nvidia/gpus/0000:00:04.0/information   "Device Minor: \t <null's minor>"
//   proc/driver/nvidia/gpus/0000:80:04.0/information   "Device Minor: \t <zero's minor>"
//   sys/bus/pci/devices/0000:00:04.0 -> ../../../devices/pci0000:00/0000:00:04.0 (80 alike)
//   sys/devices/pci0000:00/0000:00:04.0/numa_node = 0, .../pci0000:80/0000:80:04.0/numa_node = 1
#pragma once

#include <filesystem>
#include <string>

namespace devmgr::testing {

class FakeGpuHost {
 public:
  // Builds the trees inside `root`, which must exist.
  explicit FakeGpuHost(const std::filesystem::path& root);

  const std::filesystem::path& dev_root() const { return dev_root_; }
  const std::filesystem::path& sys_root() const { return sys_root_; }
  const std::filesystem::path& proc_root() const { return proc_root_; }
  // NumaNodeFile: the numa_node file of GPU `gpu` (0 or 1), for tests that spoil it.
  std::filesystem::path NumaNodeFile(int gpu) const;
  // InformationFile: the driver's information file of GPU `gpu` (0 or 1).
  std::filesystem::path InformationFile(int gpu) const;

 private:
  std::filesystem::path dev_root_;
  std::filesystem::path sys_root_;
  std::filesystem::path proc_root_;
};

// ExamplePath: examples/generic/<name> in the source tree.
std::filesystem::path ExamplePath(const std::string& name);

}  // namespace devmgr::testing
