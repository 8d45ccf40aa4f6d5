#include "plugins/generic/share_spreader.h"

#include <algorithm>
#include <set>
#include <vector>

#include "absl/strings/string_view.h"

namespace devmgr::plugins {
namespace {

// DeviceOf: the device a share's ID names, "<id>" of "<id>-<replica>".
absl::string_view DeviceOf(absl::string_view share) {
  const size_t dash = share.rfind('-');
  return dash == absl::string_view::npos ? share : share.substr(0, dash);
}

}  // namespace

ShareSpreader::ShareSpreader(const GenericConfig& config) {
  for (const GenericGroup& group : config.groups) {
    if (group.count > 1) counts_.emplace(group.name, group.count);
  }
}

deviceplugin::HookResult<v1beta1::PreferredAllocationResponse>
ShareSpreader::GetPreferredAllocation(const std::string& device_type,
                                      const v1beta1::PreferredAllocationRequest& request) {
  if (!counts_.contains(device_type)) return deviceplugin::UseDefault();
  v1beta1::PreferredAllocationResponse response;
  for (const v1beta1::ContainerPreferredAllocationRequest& container :
       request.container_requests()) {
    v1beta1::ContainerPreferredAllocationResponse* out = response.add_container_responses();
    const auto wanted = static_cast<size_t>(std::max(container.allocation_size(), 0));
    std::set<std::string> picked;
    std::set<absl::string_view> devices;
    auto pick = [&](const std::string& share) {
      if (picked.size() >= wanted || !picked.insert(share).second) return;
      devices.insert(DeviceOf(share));
      out->add_deviceids(share);
    };
    for (const std::string& share : container.must_include_deviceids()) pick(share);
    std::vector<std::string> offered(container.available_deviceids().begin(),
                                     container.available_deviceids().end());
    std::sort(offered.begin(), offered.end());
    for (const std::string& share : offered) {
      if (!devices.contains(DeviceOf(share))) pick(share);
    }
    for (const std::string& share : offered) pick(share);
  }
  return response;
}

}  // namespace devmgr::plugins
