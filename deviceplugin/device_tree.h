// DeviceTree: what a device plugin has found on the host, as device type -> device ID ->
// DeviceInfo. A Scanner builds a fresh tree on every scan and hands it to the SDK through a
// Notifier; the SDK compares it with the previous one and serves each device type as the
// extended resource "<namespace>/<type>".
//
// DeviceInfo carries everything the default Allocate needs (device nodes, mounts, envs,
// annotations), the NUMA nodes the kubelet uses for topology hints, and the health reported in
// ListAndWatch. All types here are plain values: copyable, comparable, no locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace devmgr::deviceplugin {

enum class Health { kHealthy, kUnhealthy };

// HealthString is the wire form: "Healthy" or "Unhealthy".
absl::string_view HealthString(Health health);

// A device node to create in the container (v1beta1.DeviceSpec).
struct DeviceNode {
  std::string host_path{};
  std::string container_path{};    // empty means the same as host_path
  std::string permissions = "rw";  // cgroup access: any of "r", "w", "m"

  bool operator==(const DeviceNode&) const = default;
};

// A bind mount into the container (v1beta1.Mount).
struct Mount {
  std::string host_path{};
  std::string container_path{};
  bool read_only = false;

  bool operator==(const Mount&) const = default;
};

struct DeviceInfo {
  Health health = Health::kHealthy;
  std::vector<DeviceNode> nodes{};
  std::vector<Mount> mounts{};
  std::map<std::string, std::string> envs{};
  std::map<std::string, std::string> annotations{};
  // NUMA nodes the device is attached to; empty means no topology information.
  std::vector<int64_t> numa_nodes{};

  bool operator==(const DeviceInfo&) const = default;
};

// Devices of one type, by device ID. Ordered, so that ListAndWatch snapshots and CDI files come
// out in the same order every time.
using DeviceMap = std::map<std::string, DeviceInfo>;

// IsWireSafe: the ID and every string of `info` are valid UTF-8, as strings of the v1beta1 API
// must be: a kubelet refuses a whole ListAndWatch snapshot that holds one that is not, and an
// Allocate answer too. The SDK serves a tree without the devices that are not (a file name
// found on the host can be any bytes).
bool IsWireSafe(absl::string_view id, const DeviceInfo& info);

class DeviceTree {
 public:
  // AddDevice inserts or replaces device `id` of type `type`.
  void AddDevice(const std::string& type, const std::string& id, DeviceInfo info);

  // DeviceTypeCount is the number of devices of `type` (0 for an unknown type).
  size_t DeviceTypeCount(absl::string_view type) const;

  // HealthyCount is the number of healthy devices of `type`.
  size_t HealthyCount(absl::string_view type) const;

  // Devices of `type`; an empty map for an unknown type.
  const DeviceMap& Devices(absl::string_view type) const;

  // Every type with at least one device, and its devices.
  const std::map<std::string, DeviceMap, std::less<>>& types() const { return types_; }

  // ReleaseTypes moves the whole tree out, leaving it empty: for consumers that keep the
  // devices without copying 100,000 entries.
  std::map<std::string, DeviceMap, std::less<>> ReleaseTypes() { return std::move(types_); }

  bool operator==(const DeviceTree&) const = default;

 private:
  std::map<std::string, DeviceMap, std::less<>> types_;
};

}  // namespace devmgr::deviceplugin
