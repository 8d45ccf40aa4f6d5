// ManagerImpl's part of device health in pod status (KEP-4680): which pods a change of device
// health concerns, the bounded queue of updates the host takes, and the health reported for the
// devices a container holds. Upstream: genericDeviceUpdateCallback, Updates() and
// UpdateAllocatedResourcesStatus (pkg/kubelet/cm/devicemanager/manager.go).
#include <algorithm>
#include <set>
#include <utility>

#include "devicemanager/manager_impl.h"

namespace devmgr::devicemanager {

std::vector<std::string> ManagerImpl::PodsToUpdateLocked(const std::string& resource_name,
                                                         const DeviceTable* before,
                                                         const DeviceTable& now, bool first) const {
  if (!pod_devices_.HoldsAny(resource_name)) return {};
  if (first || before == nullptr) return pod_devices_.PodsHolding(resource_name);
  std::set<std::string> pods;
  // Both tables are in ID order: one walk over the two. Devices the snapshot no longer lists
  // are not looked at, as upstream (their health becomes Healthy, silently).
  auto old = before->begin();
  for (const Device& device : now) {
    while (old != before->end() && old->id < device.id) ++old;
    const bool changed =
        old == before->end() || old->id != device.id || old->health != device.health;
    if (!changed) continue;
    if (auto owner = pod_devices_.PodAndContainerForDevice(resource_name, device.id)) {
      pods.insert(std::move(owner->first));
    }
  }
  return {pods.begin(), pods.end()};
}

void ManagerImpl::QueueHealthUpdateLocked(std::vector<std::string> pod_uids) {
  if (pod_uids.empty()) return;
  ResourceUpdate update{std::move(pod_uids)};
  if (resource_updates_.TryPush(update)) {
    ScheduleNotifyLocked();
    return;
  }
  // Never under mu_: the loop thread logs and counts it.
  loop_.Post([this, pods = std::move(update.pod_uids)] {
    DEVMGR_LOG(options_.logger, err, "Discard pods info", "err", "device update channel is full",
               "podsToUpdate", pods);
    metrics_.ResourceUpdateDropped();
  });
}

std::vector<ResourceUpdate> ManagerImpl::TakeResourceUpdates() {
  absl::MutexLock lock(&mu_);
  return resource_updates_.TakeAll();
}

ResourceHealth ManagerImpl::ReportedHealthLocked(const std::string& resource_name,
                                                 const std::string& device_id) const {
  if (!health_known_.contains(resource_name)) return ResourceHealth::kUnknown;
  // A resource whose health is known has a table: its plugin sent a snapshot.
  auto table = devices_.find(resource_name);
  const Device* device = table == devices_.end() ? nullptr : table->second->Find(device_id);
  if (device == nullptr) return ResourceHealth::kHealthy;  // upstream's default
  return device->health == Health::kHealthy ? ResourceHealth::kHealthy : ResourceHealth::kUnhealthy;
}

void ManagerImpl::UpdateAllocatedResourcesStatus(absl::string_view pod_uid,
                                                 PodStatus& status) const {
  absl::MutexLock lock(&mu_);
  for (ContainerStatus& container : status.container_statuses) {
    for (const auto& [resource, devices] : pod_devices_.ContainerDevices(pod_uid, container.name)) {
      ResourceStatus resource_status{resource, {}};
      resource_status.resources.reserve(devices.size());
      for (const auto& [id, device] : devices) {
        resource_status.resources.push_back({id, ReportedHealthLocked(resource, id)});
      }
      auto& statuses = container.allocated_resources_status;
      auto same = std::find_if(statuses.begin(), statuses.end(), [&](const ResourceStatus& s) {
        return s.name == resource_status.name;
      });
      if (same != statuses.end()) {
        *same = std::move(resource_status);
      } else {
        statuses.push_back(std::move(resource_status));
      }
    }
  }
}

}  // namespace devmgr::devicemanager
