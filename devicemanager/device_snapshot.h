// One ListAndWatch snapshot turned into the devices the manager keeps for a resource
// (DevicesFromWire, then a DeviceTable). A plugin is untrusted, and whatever it sends becomes
// capacity in node status, admission choices and checkpoint entries, so the snapshot is made
// consistent here, once, before it reaches any state:
// - an ID listed more than once is one device, as its last entry describes it (the table keeps
//   the last entry; upstream's allDevices map keeps the last entry too, but its health sets
//   keep every entry, so one device can be counted both healthy and unhealthy and capacity
//   exceeds the devices there);
// - a NUMA node listed more than once for a device counts once (each node of a device becomes a
//   checkpoint entry and a PodResources topology entry).
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "devicemanager/types.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace devmgr::devicemanager {

// DevicesFromWire: the devices of one snapshot, in the plugin's order. Health is upstream's
// rule: exactly "Healthy" is healthy, anything else is not. NUMA nodes keep the order of their
// first mention.
std::vector<Device> DevicesFromWire(const v1beta1::ListAndWatchResponse& response);

}  // namespace devmgr::devicemanager
