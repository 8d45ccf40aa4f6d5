// One ListAndWatch snapshot turned into what the manager keeps for a resource: every device by
// ID, and the IDs split by health. A plugin is untrusted, and whatever it sends becomes
// capacity in node status, admission choices and checkpoint entries, so the snapshot is made
// consistent here, once, before it reaches any state:
// - an ID listed more than once is one device, as its last entry describes it (upstream's
//   allDevices map keeps the last entry too, but its health sets keep every entry, so one
//   device can be counted both healthy and unhealthy and capacity exceeds the devices there);
// - a NUMA node listed more than once for a device counts once (each node of a device becomes a
//   checkpoint entry and a PodResources topology entry).
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "devicemanager/device_table.h"
#include "devicemanager/id_set.h"
#include "devicemanager/types.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace devmgr::devicemanager {

// DevicesFromWire: the devices of one snapshot, in the plugin's order. Health is upstream's
// rule: exactly "Healthy" is healthy, anything else is not. NUMA nodes keep the order of their
// first mention.
std::vector<Device> DevicesFromWire(const v1beta1::ListAndWatchResponse& response);

// A resource's devices as one snapshot gives them. Every ID of `all` is in exactly one of
// `healthy` and `unhealthy`, as its health says.
struct DeviceSnapshot {
  DeviceTable all;
  IdSet healthy;
  IdSet unhealthy;
};

// MakeDeviceSnapshot: `devices` (a full snapshot) by ID and by health; for a repeated ID the
// last entry wins.
DeviceSnapshot MakeDeviceSnapshot(std::vector<Device>&& devices);

}  // namespace devmgr::devicemanager
