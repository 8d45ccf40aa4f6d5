// ShareSpreader: GetPreferredAllocation for `devmgr plugin generic`. A group with `count` > 1
// serves each device as that many shares, "<id>-0", "<id>-1", ...: a container that asks for
// several gets shares of as many distinct devices as are offered, where the kubelet, choosing
// alone, may hand it two shares of one device (its node twice, one device where it asked for
// two). The kubelet's must_include come first (all of them); then one share of each device not
// picked yet, the devices with the most free shares (the least used) first, then by ID; then the
// other shares in that order. NUMA nodes are not looked at. Groups of count 1 get the SDK's
// default (UseDefault: NUMA-local). `devmgr plugin generic` offers the hook only when some group
// shares, and then for all its groups (GetDevicePluginOptions is the plugin's).
#pragma once

#include <map>
#include <string>

#include "deviceplugin/hooks.h"
#include "plugins/generic/generic_config.h"

namespace devmgr::plugins {

class ShareSpreader final : public deviceplugin::PreferredAllocator {
 public:
  explicit ShareSpreader(const GenericConfig& config);

  // Whether some group of the config has count > 1.
  bool Shares() const { return !counts_.empty(); }

  deviceplugin::HookResult<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const std::string& device_type, const v1beta1::PreferredAllocationRequest& request) override;

 private:
  // The groups whose devices are shared, with their count.
  std::map<std::string, int, std::less<>> counts_;
};

}  // namespace devmgr::plugins
