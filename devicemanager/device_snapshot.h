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
//
// DevicesFromWire reads the message's bytes itself, straight into Devices: parsing a message of
// 100,000 devices into protobuf's objects first, then copying them, cost more than the devices'
// whole intake after. It reads what protobuf reads and refuses what protobuf refuses (truncated
// or malformed fields, invalid UTF-8 in a string field, a tag of 0, an end-group where none was
// started, nesting deeper than protobuf's limit of 100), skips unknown fields and fields of an
// unexpected wire type, takes the last value of a field given twice and merges a topology given
// twice, so a plugin cannot tell it from a parse with protobuf
// (tests/devicemanager/device_snapshot_test.cc compares the two on mutated messages).
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devicemanager/types.h"

namespace devmgr::devicemanager {

// DevicesFromWire: the devices of one snapshot, the bytes of a v1beta1.ListAndWatchResponse, in
// the plugin's order. Health is upstream's rule: exactly "Healthy" is healthy, anything else is
// not. NUMA nodes keep the order of their first mention. InvalidArgument, saying where, for
// bytes protobuf would not parse; ResourceExhausted for more than `max_devices` devices.
absl::StatusOr<std::vector<Device>> DevicesFromWire(absl::string_view bytes,
                                                    size_t max_devices = kMaxDevicesPerSnapshot);

}  // namespace devmgr::devicemanager
