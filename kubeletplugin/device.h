// Device: one device of a claim a DRA driver prepared, as the driver answers it to the helper
// (upstream's kubeletplugin.Device), with what it tells the containers about it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace devmgr::kubeletplugin {

// What the containers using a device read about it when the helper writes device metadata
// (HelperOptions::device_metadata; upstream's kubeletplugin.DeviceMetadata).
struct DeviceMetadata {
  // Attributes as a ResourceSlice's device has them, by qualified name:
  // {"pciBusID": {"string": "0000:03:00.0"}, "memory": {"int": 80}}. Unqualified names belong
  // to the driver's domain.
  nlohmann::json attributes = nlohmann::json::object();
  // A network device's data as a claim's status.devices[].networkData has it
  // ({"interfaceName": "eth0", "ips": ["10.0.0.5/24"], "hardwareAddress": "..."}); null: none.
  nlohmann::json network_data = nullptr;

  bool operator==(const DeviceMetadata&) const = default;
};

// BaseRequestName: a request's name without the subrequest a prioritized list chose
// ("gpu/large" is request "gpu"): the kubelet matches containers' claims by request.
inline std::string BaseRequestName(const std::string& request) {
  return request.substr(0, request.find('/'));
}

struct Device {
  // The requests it serves; a subrequest ("gpu/large") is answered as its request ("gpu").
  std::vector<std::string> requests = {};
  std::string pool_name = {};
  std::string device_name = {};
  std::vector<std::string> cdi_device_ids = {};
  std::optional<std::string> share_id = {};
  // Written to the containers' metadata file when the helper writes device metadata; ignored
  // otherwise. Null: the device is listed without attributes, which the driver may add later
  // (Helper::UpdateRequestMetadata, e.g. once the pod's network is set up).
  std::optional<DeviceMetadata> metadata = std::nullopt;

  bool operator==(const Device&) const = default;
};

}  // namespace devmgr::kubeletplugin
