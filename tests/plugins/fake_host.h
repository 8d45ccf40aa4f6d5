// FakeGpuHost: folders that look like a node with two NVIDIA GPUs to `devmgr plugin generic`
// run with --dev-root <root>/host --sys-root <root>/sys, so that tests need no hardware.
//
//   host/dev/nvidia0 -> /dev/null   the GPU nodes are symlinks to real character devices, since
//   host/dev/nvidia1 -> /dev/zero   a test cannot mknod; stat() gives their major:minor
//   host/dev/nvidiactl, nvidia-uvm, nvidia-uvm-tools   plain files: shared nodes only need to exist
//   sys/dev/char/<null's major:minor> -> ../../devices/pci0000:00/0000:00:04.0/gpu/nvidia0
//   sys/dev/char/<zero's major:minor> -> ../../devices/pci0000:80/0000:80:04.0/gpu/nvidia1
//   sys/devices/pci0000:00/0000:00:04.0/numa_node = 0, .../pci0000:80/0000:80:04.0/numa_node = 1
//
// The sysfs folders of the GPU nodes have no numa_node of their own: the lookup finds their PCI
// functions' one level up, as it does on a real node.
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
  // NumaNodeFile: the numa_node file of GPU `gpu` (0 or 1), for tests that spoil it.
  std::filesystem::path NumaNodeFile(int gpu) const;

 private:
  std::filesystem::path dev_root_;
  std::filesystem::path sys_root_;
};

// ExamplePath: examples/generic/<name> in the source tree.
std::filesystem::path ExamplePath(const std::string& name);

}  // namespace devmgr::testing
