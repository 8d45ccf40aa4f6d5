// RunContainerOptions: what a container runtime needs to give a container its devices (env,
// mounts, device nodes, annotations, CDI device names), merged from the plugins' Allocate
// responses of every resource the container holds; upstream's DeviceRunContainerOptions and
// podDevices.deviceRunContainerOptions. Plain values and one pure function.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace devmgr::devicemanager {

struct MountOption {
  std::string container_path;  // also the mount's name, as upstream
  std::string host_path;
  bool read_only = false;
  bool operator==(const MountOption&) const = default;
};

struct DeviceOption {
  std::string container_path;
  std::string host_path;
  std::string permissions;  // cgroup permissions, e.g. "rw" or "mrw"
  bool operator==(const DeviceOption&) const = default;
};

struct RunContainerOptions {
  std::vector<std::pair<std::string, std::string>> envs;
  std::vector<MountOption> mounts;
  std::vector<DeviceOption> devices;
  std::vector<std::pair<std::string, std::string>> annotations;
  // Fully qualified CDI device names ("vendor.com/class=name"), no duplicates.
  std::vector<std::string> cdi_devices;

  bool operator==(const RunContainerOptions&) const = default;
};

// MergeRunContainerOptions merges `responses` (resource name -> that resource's response, in
// the order given; callers pass them sorted by resource name) as upstream does: the first env
// or annotation per key wins, a conflicting value is logged; devices and mounts are
// de-duplicated by container path, first wins, a conflicting host path is logged; CDI names
// are de-duplicated. Within one response, maps are taken in key order, lists in wire order, so
// the same responses always give the same options.
RunContainerOptions MergeRunContainerOptions(
    const std::vector<std::pair<std::string, const v1beta1::ContainerAllocateResponse*>>& responses,
    const LoggerPtr& logger);

}  // namespace devmgr::devicemanager
