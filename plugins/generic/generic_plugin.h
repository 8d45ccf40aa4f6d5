// `devmgr plugin generic`: exposes host device nodes (/dev/fuse, /dev/ttyUSB*, GPUs with their
// control nodes, ...) to containers, one device type per group of its config (generic_config.h).
//
// Every rescan globs each group's paths; each match is one device, or `count` devices with IDs
// "<id>-0", "<id>-1", ... when it may be shared. The ID is the matched path without "/dev/" and
// with '/' as '_' ("net_tun"); of two paths of a group that make one ID ("/dev/a/b", "/dev/a_b"),
// the one this run saw first is served and the other left out, with a warning (at a start: the
// one of the earlier entry of the group's paths, then in glob order). A device's nodes are its
// matched path, then its extraPaths, then the group's sharedPaths; it is healthy while all of them
// exist. A device whose path disappears stays listed as unhealthy; new matches appear at the next
// rescan. Its NUMA node is what sysfs says of its own nodes (sysfs_numa.h; for an NVIDIA GPU, of
// the PCI function the driver names in procfs), never of the shared ones. A device of a group
// with `nvml` is also unhealthy while its GpuHealth has a fault for the GPU of its matched node
// (its minor, when the node is the NVIDIA driver's): an XID error, for one, which is served at
// once, not at the next rescan.
//
// Roots: the config names nodes as the host sees them ("/dev/nvidia0"), and so do the Allocate
// answers and CDI specs, since the kubelet and the runtime work on the host. The plugin itself
// looks for them under dev_root (where the host's / is mounted when the plugin runs in a
// container, or a folder of stand-ins in tests) and reads sysfs at sys_root, procfs at proc_root.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "deviceplugin/device_tree.h"
#include "deviceplugin/scanner.h"
#include "plugins/generic/generic_config.h"
#include "plugins/generic/gpu_health.h"
#include "plugins/generic/substitution.h"

namespace devmgr::plugins {

struct GenericScannerOptions {
  std::filesystem::path dev_root = "/";
  std::filesystem::path sys_root = "/sys";
  std::filesystem::path proc_root = "/proc";
  absl::Duration rescan_interval = absl::Seconds(5);
  LoggerPtr logger = nullptr;
  // Asked of the devices of groups with `nvml`; without it they are unhealthy. A change it
  // reports wakes Scan for a rescan. Outlives the scanner.
  GpuHealth* gpu_health = nullptr;
};

class GenericScanner final : public deviceplugin::Scanner {
 public:
  GenericScanner(GenericConfig config, GenericScannerOptions options);

  // Scan notifies a fresh tree every rescan_interval, and as soon as gpu_health reports a
  // change. A failed scan (sysfs that could not be read) is logged and tried again at the next
  // interval; meanwhile the devices last notified are served unhealthy, since what they are is
  // not known.
  absl::Status Scan(deviceplugin::Notifier& notifier, const deviceplugin::StopToken& stop) override;

  // ScanOnce returns the tree for the host as it is now, remembering every path seen so that
  // vanished ones are reported unhealthy. Groups overlap when one node belongs to two devices
  // (two groups' globs match it), or is a device of one and a shared path of another: until a
  // scan succeeds that is InvalidArgument naming the path and both claimants; after one, the
  // device that held the node when it was last there keeps it (of two others, the earlier in
  // the config), the other claimant is served unhealthy, and the overlap is logged when it
  // begins and ends; the other devices are served as they are. A device whose ID a device of
  // its group seen earlier has is left out for the run (logged once). The errors of
  // NumaNodeOf. Only from one thread at a time; blocks on file I/O.
  absl::StatusOr<deviceplugin::DeviceTree> ScanOnce();

 private:
  // A matched path, and which entry of the group's paths matched it first.
  struct SeenDevice {
    std::string path;
    size_t entry = 0;
  };

  // A device of a scan, its replicas' IDs and infos, before it claims its own nodes.
  struct Found {
    std::string type;
    // DeviceOwner: who holds the nodes, in errors and between scans.
    std::string owner;
    std::vector<std::string> own_paths;
    // Those of own_paths that exist.
    std::set<std::string> present_paths;
    // Each replica's nodes are its own until the NUMA nodes are read; the group's shared nodes
    // follow them then.
    std::vector<std::pair<std::string, deviceplugin::DeviceInfo>> replicas;
    std::vector<deviceplugin::DeviceNode> shared;
  };

  // UnderRoot: where the plugin finds `host_path`.
  std::string UnderRoot(const std::string& host_path) const;
  bool Exists(const std::string& host_path) const;
  // Glob returns the host paths that match `pattern` under the root.
  std::vector<std::string> Glob(const std::string& pattern) const;
  // OwnNodes: the nodes that belong to `device` alone, expanded with `values` (an optional
  // extra node that does not exist left out).
  std::vector<deviceplugin::DeviceNode> OwnNodes(const GenericGroup& group,
                                                 const SeenDevice& device,
                                                 const DeviceValues& values) const;
  // GpuFault: why the GPU of `host_path`, a device of a group with `nvml`, is not to be used;
  // nullopt when it may be, or when the node is missing (which makes it unhealthy anyway).
  std::optional<std::string> GpuFault(const GenericGroup& group,
                                      const std::string& host_path) const;

  const GenericConfig config_;
  const GenericScannerOptions options_;
  // dev_root as a prefix of host paths: no trailing '/', empty for "/".
  const std::string dev_prefix_;
  // Every device ever matched, per group, in the order first seen: reported unhealthy once gone.
  std::map<std::string, std::vector<SeenDevice>> seen_;
  // A scan succeeded: overlaps no longer fail a scan.
  bool served_ = false;
  // Each node's holder when it was last there (a node that is away keeps its holder; the holder
  // keeps it while it claims it), and the overlaps the last scan found.
  std::map<std::string, std::string> holders_;
  std::set<std::string> overlaps_;
  // The GPU faults of the last scan, by device (DeviceOwner), logged when they begin, change
  // and end.
  std::map<std::string, std::string> gpu_faults_;
  // The ID collisions logged (a device left out, the other named); one lasts for the run.
  std::set<std::string> collisions_;
};

}  // namespace devmgr::plugins
