// The SDK's default answer to GetPreferredAllocation, also usable by plugins that want to adjust
// it: keep the devices the kubelet must include, then fill up with offered devices that share a
// NUMA node with the devices picked so far, then with any offered device.
#pragma once

#include <string>
#include <vector>

#include "deviceplugin/device_tree.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace devmgr::deviceplugin {

// PreferNumaLocal picks `request.allocation_size()` device IDs. Devices unknown to `devices` count
// as having no NUMA node. When nothing is picked yet, it starts from the NUMA node that offers the
// most devices, so that small requests stay on one node. Runs in O(offered devices).
std::vector<std::string> PreferNumaLocal(
    const DeviceMap& devices, const v1beta1::ContainerPreferredAllocationRequest& request);

}  // namespace devmgr::deviceplugin
