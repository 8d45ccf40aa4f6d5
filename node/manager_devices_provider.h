// ManagerDevicesProvider: the PodResources service's view of the device manager. A few lines
// of translation that live with the host, so that devicemanager/ never depends on
// podresources/ (DESIGN.md). Every call copies under the Manager's lock and returns; none
// touches a plugin or the disk.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "devicemanager/manager.h"
#include "podresources/providers.h"

namespace devmgr::node {

class ManagerDevicesProvider final : public podresources::DevicesProvider {
 public:
  // `manager` is not owned and must outlive the PodResources server.
  explicit ManagerDevicesProvider(devicemanager::Manager& manager) : manager_(manager) {}

  void UpdateAllocatedDevices() override { manager_.UpdateAllocatedDevices(); }

  podresources::ResourceDeviceInstances GetDevices(const std::string& pod_uid,
                                                   const std::string& container_name) override {
    return Instances(manager_.GetDevices(pod_uid, container_name));
  }

  std::optional<uint64_t> AllocationsRevision() override { return manager_.AllocationsRevision(); }
  std::optional<uint64_t> PodAllocationsRevision(const std::string& pod_uid) override {
    return manager_.PodAllocationsRevision(pod_uid);
  }
  std::optional<std::vector<std::string>> PodsWithAllocationsChangedSince(
      uint64_t revision) override {
    return manager_.PodsChangedSince(revision);
  }

  // The Manager already answers with healthy devices only.
  podresources::ResourceDeviceInstances GetAllocatableDevices() override {
    return Instances(manager_.GetAllocatableDevices());
  }
  std::optional<std::map<std::string, uint64_t>> AllocatableRevisions() override {
    return manager_.AllocatableRevisions();
  }
  std::map<std::string, podresources::NumaNodes> GetAllocatableDevicesOf(
      const std::string& resource_name) override {
    return NumaNodesById(manager_.GetAllocatableDevices(resource_name));
  }

  // As the pod's status would report it (Manager::UpdateAllocatedResourcesStatus).
  podresources::DevicesHealth GetDevicesHealth(const std::string& pod_uid,
                                               const std::string& container_name) override {
    devicemanager::PodStatus status;
    status.container_statuses.push_back({container_name, {}});
    manager_.UpdateAllocatedResourcesStatus(pod_uid, status);
    podresources::DevicesHealth out;
    for (const auto& resource : status.container_statuses[0].allocated_resources_status) {
      auto& by_id = out[resource.name];
      for (const auto& device : resource.resources) {
        by_id.emplace(device.resource_id, devicemanager::ResourceHealthName(device.health));
      }
    }
    return out;
  }

 private:
  static std::map<std::string, podresources::NumaNodes> NumaNodesById(
      const devicemanager::DeviceMap& devices) {
    std::map<std::string, podresources::NumaNodes> out;
    for (const auto& [id, device] : devices) out.emplace_hint(out.end(), id, device.numa_nodes);
    return out;
  }
  static podresources::ResourceDeviceInstances Instances(
      const devicemanager::ResourceDevices& devices) {
    podresources::ResourceDeviceInstances out;
    for (const auto& [resource, by_id] : devices) out.emplace(resource, NumaNodesById(by_id));
    return out;
  }

  devicemanager::Manager& manager_;
};

}  // namespace devmgr::node
