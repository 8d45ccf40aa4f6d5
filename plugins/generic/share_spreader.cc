#include "plugins/generic/share_spreader.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
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
      if (!picked.insert(share).second) return;
      devices.insert(DeviceOf(share));
      out->add_deviceids(share);
    };
    // All of them, whatever the size: the kubelet requires them.
    for (const std::string& share : container.must_include_deviceids()) pick(share);
    // The free shares of each device, and the devices with the most free first (the least
    // used), then by ID.
    std::map<absl::string_view, std::vector<const std::string*>> free;
    for (const std::string& share : container.available_deviceids()) {
      free[DeviceOf(share)].push_back(&share);
    }
    std::vector<std::pair<absl::string_view, std::vector<const std::string*>>> by_use(free.begin(),
                                                                                      free.end());
    std::stable_sort(by_use.begin(), by_use.end(), [](const auto& a, const auto& b) {
      return a.second.size() > b.second.size();
    });
    for (auto& [device, shares] : by_use) {
      std::sort(shares.begin(), shares.end(),
                [](const std::string* a, const std::string* b) { return *a < *b; });
    }
    // One share of each device not picked yet, then the other shares.
    for (const auto& [device, shares] : by_use) {
      if (picked.size() >= wanted) break;
      if (!devices.contains(device)) pick(*shares.front());
    }
    for (const auto& [device, shares] : by_use) {
      for (const std::string* share : shares) {
        if (picked.size() >= wanted) break;
        pick(*share);
      }
    }
  }
  return response;
}

}  // namespace devmgr::plugins
