// DraResourcesProvider: the PodResources service's view of the DRA manager, the
// `dynamic_resources` of each container: for every claim the container uses, its name and
// namespace and, per device its drivers prepared, the driver, pool, device, share ID and CDI
// device names (upstream's ContainerManager.GetDynamicResources), and for Watch the health of
// those devices. The pods' claims come from the node's claim store. Every call copies under the
// stores' locks and returns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dra/manager.h"
#include "node/claim_store.h"
#include "podresources/providers.h"

namespace devmgr::node {

class DraResourcesProvider final : public podresources::DynamicResourcesProvider {
 public:
  // Neither is owned; both must outlive the PodResources server.
  DraResourcesProvider(const dra::Manager& manager, const ClaimStore& claims)
      : manager_(manager), claims_(claims) {}

  std::vector<::v1::DynamicResource> GetDynamicResources(
      const podresources::Pod& pod, const podresources::Container& container) override;
  // The answer depends on the stored pods' claims and the manager's claim states; both counters
  // only grow, so their sum changes whenever either does.
  std::optional<uint64_t> Revision() override {
    return claims_.Revision() + manager_.ClaimsRevision();
  }
  // The DRA entries of the container's allocatedResourcesStatus, as the pod status shows them
  // (dra::Manager::ContainerResourceStatuses); empty without the ResourceHealthStatus gate.
  podresources::DevicesHealth GetDynamicResourcesHealth(
      const podresources::Pod& pod, const podresources::Container& container) override;

 private:
  const dra::Manager& manager_;
  const ClaimStore& claims_;
};

}  // namespace devmgr::node
