#include "bench/driver/publish_pool.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace devmgr::bench {

resourceslice::DriverResources PublishedPool(int devices, const std::string& node) {
  resourceslice::Pool pool;
  for (int i = 0; i < devices; ++i) {
    if (i % kPublishedDevicesPerSlice == 0) pool.slices.emplace_back();
    kubeapi::Device device;
    device.name = absl::StrCat("gpu-", i);
    device.extra["attributes"] = {{"model", {{"string", "a100"}}}, {"index", {{"int", i}}}};
    device.extra["capacity"] = {{"memory", {{"value", "80Gi"}}}};
    pool.slices.back().devices.push_back(std::move(device));
  }
  resourceslice::DriverResources resources;
  resources.pools[node] = std::move(pool);
  return resources;
}

}  // namespace devmgr::bench
