#include "node/dra_resources_provider.h"

#include <map>
#include <string>

namespace devmgr::node {

std::vector<::v1::DynamicResource> DraResourcesProvider::GetDynamicResources(
    const podresources::Pod& pod, const podresources::Container& container) {
  std::vector<::v1::DynamicResource> resources;
  const std::optional<dra::Pod> claims = claims_.FindPod(pod.uid);
  if (!claims.has_value()) return resources;
  for (const auto* list : {&claims->init_containers, &claims->containers}) {
    for (const dra::Container& uses : *list) {
      if (uses.name != container.name) continue;
      // A claim the manager does not hold (yet) is left out, as upstream logs and skips it.
      absl::StatusOr<std::vector<dra::ClaimInfoState>> infos =
          manager_.GetContainerClaimInfos(*claims, uses);
      if (!infos.ok()) return resources;
      for (const dra::ClaimInfoState& info : *infos) {
        ::v1::DynamicResource& resource = resources.emplace_back();
        resource.set_claim_name(info.claim_name);
        resource.set_claim_namespace(info.namespace_name);
        for (const auto& [driver, state] :
             info.driver_state.value_or(std::map<std::string, dra::DriverState>{})) {
          for (const dra::CheckpointDevice& device :
               state.devices.value_or(std::vector<dra::CheckpointDevice>{})) {
            ::v1::ClaimResource& claim_resource = *resource.add_claim_resources();
            claim_resource.set_driver_name(driver);
            claim_resource.set_pool_name(device.pool_name);
            claim_resource.set_device_name(device.device_name);
            if (device.share_id.has_value()) claim_resource.set_share_id(*device.share_id);
            // The device's own CDI IDs (DRA-06). Upstream's GetDynamicResources gathers them
            // per driver, in a list made outside its loop over the devices, so that a driver's
            // later devices list the earlier ones' too; a client cannot want that.
            for (const std::string& cdi :
                 device.cdi_device_ids.value_or(dra::GoStrings::value_type{})) {
              claim_resource.add_cdi_devices()->set_name(cdi);
            }
          }
        }
      }
    }
  }
  return resources;
}

podresources::DevicesHealth DraResourcesProvider::GetDynamicResourcesHealth(
    const podresources::Pod& pod, const podresources::Container& container) {
  podresources::DevicesHealth health;
  const std::optional<dra::Pod> claims = claims_.FindPod(pod.uid);
  if (!claims.has_value()) return health;
  for (const auto* list : {&claims->init_containers, &claims->containers}) {
    for (const dra::Container& uses : *list) {
      if (uses.name != container.name) continue;
      for (const dra::ResourceStatus& status : manager_.ContainerResourceStatuses(*claims, uses)) {
        std::map<std::string, std::string>& by_id = health[status.name];
        for (const dra::ResourceHealth& resource : status.resources) {
          by_id.emplace(resource.resource_id, dra::ResourceHealthStatusName(resource.health));
        }
      }
    }
  }
  return health;
}

}  // namespace devmgr::node
