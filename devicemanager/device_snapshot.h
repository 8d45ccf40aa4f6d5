// One ListAndWatch snapshot turned into what the manager keeps for a resource: every device by
// ID, and the IDs split by health. Kept apart from the stream and the manager's lock because a
// plugin is untrusted and whatever it sends becomes capacity in node status, admission choices
// and checkpoint entries: this is where a snapshot is read. Pure functions; thread-safe.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "devicemanager/types.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace devmgr::devicemanager {

// DevicesFromWire: the devices of one snapshot, in the plugin's order. Health is upstream's
// rule: exactly "Healthy" is healthy, anything else is not. NUMA nodes keep their order.
std::vector<Device> DevicesFromWire(const v1beta1::ListAndWatchResponse& response);

// A resource's devices as one snapshot gives them.
struct DeviceSnapshot {
  DeviceMap all;
  std::set<std::string> healthy;
  std::set<std::string> unhealthy;
};

// MakeDeviceSnapshot: `devices` (a full snapshot) by ID and by health.
DeviceSnapshot MakeDeviceSnapshot(std::vector<Device>&& devices);

}  // namespace devmgr::devicemanager
