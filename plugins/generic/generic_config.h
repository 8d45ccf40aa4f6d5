// The config of `devmgr plugin generic`: which host device nodes make up which devices, served
// as which extended resources. YAML, or JSON when the text starts with '{'; the keys are the
// same. A GPU is a per-device node plus control nodes that every allocation needs:
//
//   namespace: nvidia.com           # resources are <namespace>/<group name>
//   groups:
//     - name: gpu
//       paths: ["/dev/nvidia[0-9]*"]  # globs; every match is one device
//       extraPaths: []                # more nodes of each device, e.g. "/dev/x-ctl{index}"
//       sharedPaths:                  # nodes added to every allocation of the group
//         - /dev/nvidiactl
//         - /dev/nvidia-uvm
//         - /dev/nvidia-uvm-tools
//       count: 1                      # containers that may share each device (default 1)
//       permissions: rw               # cgroup access given to the container (default "rw")
//       mounts:                       # bind mounts added with every device of the group
//         - {hostPath: /etc/x, containerPath: /etc/x, readOnly: true}
//       env: {DEVMGR_GPU_DEVICES: "{path}"}  # values may use {id}, {index}, {path}
//       annotations: {devmgr.io/gpu-minors: "{index}"}
//       cdiKind: devmgr.io/nvidia-gpu # CDI kind with --cdi-dir (default <namespace>/<name>)
//       nvml: {}                      # NVIDIA GPUs: health from NVML's XID events too
//
// An entry of paths, extraPaths or sharedPaths is a path, or a map in the kubelet's DeviceSpec
// shape: {path: /dev/ttyUSB*, containerPath: /dev/ttyUSB{index}, permissions: rw}, where an
// entry of extraPaths or sharedPaths may add `optional: true` (see NodeSpec). Substitutions
// are described in substitution.h. `nvml` (NvmlHealth) takes `ignoredXids`, a list of XIDs. Every
// path is absolute and names the node as the host sees it; the plugin looks for it under its
// --dev-root.
#pragma once

#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "deviceplugin/device_tree.h"

namespace devmgr::plugins {

// One device node of a group's devices.
struct NodeSpec {
  // paths: a glob. extraPaths: a template. sharedPaths: a plain path.
  std::string path;
  // A template; empty means the same as the host path.
  std::string container_path{};
  // Empty means the group's permissions.
  std::string permissions{};
  // extraPaths and sharedPaths: while the node does not exist it is left out of the devices
  // (and of their health) instead of making them unhealthy: /dev/nvidia-uvm-tools, which a
  // node may lack.
  bool optional = false;
};

// The XIDs that NVIDIA's device plugin ignores: errors of an application, after which the GPU
// still works (13 graphics engine exception, 31 GPU memory page fault, 43 GPU stopped
// processing, 45 preemptive cleanup, 68 video processor exception, 109 context switch timeout).
inline constexpr uint64_t kApplicationXids[] = {13, 31, 43, 45, 68, 109};

// A group whose devices are NVIDIA GPUs, /dev/nvidia<minor>, served healthy only while NVML
// reports no XID error of theirs outside ignored_xids (xid_watch.h), besides their nodes existing.
struct NvmlHealth {
  std::vector<uint64_t> ignored_xids{std::begin(kApplicationXids), std::end(kApplicationXids)};
};

// The most containers that may share one device: each share is a device of its own in
// ListAndWatch, and a typo of many zeros would build millions of them.
inline constexpr int kMaxGenericCount = 1000;

struct GenericGroup {
  std::string name;
  std::vector<NodeSpec> paths;
  std::vector<NodeSpec> extra_paths{};
  std::vector<NodeSpec> shared_paths{};
  int count = 1;  // 1 to kMaxGenericCount
  std::string permissions = "rw";
  std::vector<deviceplugin::Mount> mounts{};
  // Values are templates.
  std::map<std::string, std::string> env{};
  std::map<std::string, std::string> annotations{};
  // "<vendor>/<class>"; empty means <namespace>/<name>.
  std::string cdi_kind{};
  std::optional<NvmlHealth> nvml{};
};

struct GenericConfig {
  std::string resource_namespace = "devmgr.io";
  std::vector<GenericGroup> groups;
};

// ParseGenericConfig reads and validates a config. InvalidArgument naming the key for anything
// wrong: an unknown key ("groups[0]: unknown key \"pathz\""), a value of the wrong type, no
// groups, a group without a name or paths, two groups with one name or one CDI kind, a count
// outside 1 to kMaxGenericCount, permissions other than a mix of r, w and m, a relative path, a
// glob or substitution in sharedPaths, an extraPaths entry without substitutions (the same node
// for every device is a shared path), an unknown substitution, an invalid namespace, group name
// or CDI kind.
// Which paths match is known only on the host: GenericScanner reports groups that overlap.
absl::StatusOr<GenericConfig> ParseGenericConfig(const std::string& text);

// CdiKinds: the CDI kind of every group that names one, by group name (CdiOptions::kinds).
std::map<std::string, std::string, std::less<>> CdiKinds(const GenericConfig& config);

}  // namespace devmgr::plugins
