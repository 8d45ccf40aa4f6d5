// `devmgr plugin generic`: exposes host device nodes (/dev/fuse, /dev/net/tun, /dev/ttyUSB*, ...)
// to containers, as configured by a small YAML or JSON file:
//
//   namespace: devmgr.io          # resources are <namespace>/<group name>
//   groups:
//     - name: fuse
//       paths: ["/dev/fuse"]      # device paths or globs; every match is one device
//       count: 10                 # containers that may share each device (default 1)
//       permissions: rw           # cgroup access given to the container (default "rw")
//       mounts:                   # bind mounts added with every device of the group
//         - {hostPath: /etc/x, containerPath: /etc/x, readOnly: true}
//
// Device IDs are the path without a leading "/dev/" and with '/' as '_' ("net_tun"), with
// "-<n>" appended when count > 1. A device whose path disappears stays listed as unhealthy; new
// matches appear at the next rescan.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "deviceplugin/device_tree.h"
#include "deviceplugin/scanner.h"

namespace devmgr::plugins {

struct GenericGroup {
  std::string name;
  std::vector<std::string> paths;
  int count = 1;
  std::string permissions = "rw";
  std::vector<deviceplugin::Mount> mounts;
};

struct GenericConfig {
  std::string resource_namespace = "devmgr.io";
  std::vector<GenericGroup> groups;
};

// ParseGenericConfig reads YAML, or JSON when the text starts with '{'. InvalidArgument with the
// reason for anything malformed (no groups, a group without a name or paths, count < 1,
// permissions other than a mix of r, w, m).
absl::StatusOr<GenericConfig> ParseGenericConfig(const std::string& text);

// GenericScanner globs every group's paths each `rescan_interval`.
class GenericScanner final : public deviceplugin::Scanner {
 public:
  GenericScanner(GenericConfig config, absl::Duration rescan_interval)
      : config_(std::move(config)), rescan_interval_(rescan_interval) {}

  absl::Status Scan(deviceplugin::Notifier& notifier, const deviceplugin::StopToken& stop) override;

  // ScanOnce returns the tree for the host as it is now, remembering every path seen so that
  // vanished ones are reported unhealthy. Only from one thread at a time.
  deviceplugin::DeviceTree ScanOnce();

 private:
  const GenericConfig config_;
  const absl::Duration rescan_interval_;
  // Every path ever matched, per group: reported unhealthy once gone.
  std::map<std::string, std::vector<std::string>> seen_paths_;
};

}  // namespace devmgr::plugins
