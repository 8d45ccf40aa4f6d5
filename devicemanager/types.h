// Value types shared by the device manager's public API and its parts: a device as a plugin
// reported it, the per-resource device maps the host reads, and the capacity answer that feeds
// node status. Plain values; no locking, no behaviour beyond construction.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace devmgr::devicemanager {

// Health as the kubelet sees it: a plugin's "Healthy" is kHealthy, any other string kUnhealthy.
enum class Health { kHealthy, kUnhealthy };

// One device of one resource.
struct Device {
  std::string id;
  Health health = Health::kHealthy;
  // NUMA nodes from the plugin's TopologyInfo, in the order reported; empty = no topology.
  std::vector<int64_t> numa_nodes;

  bool operator==(const Device&) const = default;
};

// Device ID -> device.
using DeviceMap = std::map<std::string, Device>;
// Resource name -> its devices (upstream's ResourceDeviceInstances).
using ResourceDevices = std::map<std::string, DeviceMap>;

// What GetCapacity reports for node status.
struct CapacityResult {
  // Resource name -> number of devices (healthy + unhealthy) of every live resource; 0 for one
  // whose plugin went away before sending devices, until its grace period ends.
  std::map<std::string, int64_t> capacity;
  // Resource name -> number of healthy devices of every live resource.
  std::map<std::string, int64_t> allocatable;
  // Resources dropped by this call (their plugin stayed away past the grace period); each is
  // reported once. The host sets their capacity to 0.
  std::vector<std::string> removed;
};

// The state of a resource's endpoint, as Manager::GetResourceSummaries reports it.
enum class EndpointState {
  // Its plugin is connected.
  kRunning,
  // Its plugin went away, or it was restored from the checkpoint, and its grace period runs.
  kStopped,
  // Stopped for longer than the grace period: the next GetCapacity removes it.
  kExpired,
};

// One resource that has an endpoint, with its device counts (for metrics and status displays).
struct ResourceSummary {
  std::string resource_name;
  EndpointState state = EndpointState::kRunning;
  int64_t healthy_devices = 0;
  int64_t unhealthy_devices = 0;

  bool operator==(const ResourceSummary&) const = default;
};

// Defaults of ManagerOptions, named for the host's flags and for tests.
inline constexpr absl::Duration kEndpointStopGracePeriod = absl::Minutes(5);
inline constexpr absl::Duration kDefaultDialTimeout = absl::Seconds(10);
inline constexpr absl::Duration kDefaultPluginCallTimeout = absl::Seconds(30);
inline constexpr absl::Duration kPreStartContainerTimeout = absl::Seconds(30);
// 100,000 devices with 64-byte IDs and topology come to about 10 MiB; leave room for more.
inline constexpr int kDefaultMaxMessageBytes = 64 << 20;
// The largest Allocate answer taken: gRPC's default limit on what a kubelet receives (its
// channels to plugins set none). The channel's own limit is larger, for ListAndWatch; an answer
// is kept with its pod and written into every checkpoint after it, so one plugin's answers of
// tens of megabytes would slow every admission on the node and fill its disk.
inline constexpr size_t kMaxAllocateResponseBytes = 4 << 20;
// The most devices one ListAndWatch snapshot may list, ten times the 100,000 a large node has. A
// device can take 2 bytes on the wire and a hundred in memory, so within the message limit a
// plugin could otherwise make the manager hold gigabytes.
inline constexpr size_t kMaxDevicesPerSnapshot = 1 << 20;

}  // namespace devmgr::devicemanager
