#include "devicemanager/run_options.h"

#include <map>
#include <set>

namespace devmgr::devicemanager {
namespace {

// A proto map's entries sorted by key (proto maps iterate in unspecified order).
std::map<std::string, std::string> Sorted(
    const google::protobuf::Map<std::string, std::string>& map) {
  return {map.begin(), map.end()};
}

}  // namespace

RunContainerOptions MergeRunContainerOptions(
    const std::vector<std::pair<std::string, const v1beta1::ContainerAllocateResponse*>>& responses,
    const LoggerPtr& logger) {
  RunContainerOptions options;
  std::map<std::string, std::string> envs;
  std::map<std::string, std::string> devices;
  std::map<std::string, std::string> mounts;
  std::map<std::string, std::string> annotations;
  std::set<std::string> cdi_devices;
  for (const auto& [resource, response] : responses) {
    for (const auto& [key, value] : Sorted(response->envs())) {
      auto [it, added] = envs.emplace(key, value);
      if (!added) {
        if (it->second != value) {
          DEVMGR_LOG(logger, err, "Environment variable has conflicting setting", "envKey", key,
                     "expected", value, "got", it->second);
        }
        continue;
      }
      options.envs.emplace_back(key, value);
    }
    for (const auto& device : response->devices()) {
      auto [it, added] = devices.emplace(device.container_path(), device.host_path());
      if (!added) {
        if (it->second != device.host_path()) {
          DEVMGR_LOG(logger, err, "Container device has conflicting mapping host devices",
                     "containerPath", device.container_path(), "expected", device.host_path(),
                     "got", it->second);
        }
        continue;
      }
      options.devices.push_back(
          {device.container_path(), device.host_path(), device.permissions()});
    }
    for (const auto& mount : response->mounts()) {
      auto [it, added] = mounts.emplace(mount.container_path(), mount.host_path());
      if (!added) {
        if (it->second != mount.host_path()) {
          DEVMGR_LOG(logger, err, "Container mount has conflicting mapping host mounts",
                     "containerPath", mount.container_path(), "expected", mount.host_path(), "got",
                     it->second);
        }
        continue;
      }
      options.mounts.push_back({mount.container_path(), mount.host_path(), mount.read_only()});
    }
    for (const auto& [key, value] : Sorted(response->annotations())) {
      auto [it, added] = annotations.emplace(key, value);
      if (!added) {
        if (it->second != value) {
          DEVMGR_LOG(logger, err, "Annotation has conflicting setting", "annotationKey", key,
                     "expected", value, "got", it->second);
        }
        continue;
      }
      options.annotations.emplace_back(key, value);
    }
    for (const auto& cdi : response->cdi_devices()) {
      if (cdi_devices.insert(cdi.name()).second) options.cdi_devices.push_back(cdi.name());
    }
  }
  return options;
}

}  // namespace devmgr::devicemanager
