// Building allocator inputs in tests from the JSON a manifest would hold.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kubeapi/resource_claim.h"
#include "kubeapi/resource_slice.h"
#include "structured/allocator.h"

namespace devmgr::structured::test_inputs {

using Json = nlohmann::json;

inline kubeapi::ResourceClaim Claim(const std::string& json) {
  absl::StatusOr<kubeapi::ResourceClaim> claim = kubeapi::DecodeResourceClaim(Json::parse(json));
  EXPECT_TRUE(claim.ok()) << claim.status();
  return claim.value_or(kubeapi::ResourceClaim{});
}

// A class selecting the devices of `driver`.
inline kubeapi::DeviceClass ClassOf(const std::string& name, const std::string& driver) {
  Json object = {{"metadata", {{"name", name}}},
                 {"spec",
                  {{"selectors",
                    Json::array({{{"cel", {{"expression", "device.driver == \"" + driver + "\""}}}}})}}}};
  return *kubeapi::DecodeDeviceClass(object);
}

// A slice of node-1's pool-1 of driver-a holding `devices` (a JSON list) and, when given, its
// shared counters (a JSON list).
inline kubeapi::ResourceSlicePtr Slice(const std::string& name, const std::string& devices,
                                       const std::string& counters = "") {
  Json spec = {{"driver", "driver-a"},
               {"nodeName", "node-1"},
               {"pool", {{"name", "pool-1"}, {"generation", 1}, {"resourceSliceCount", 1}}}};
  if (!devices.empty()) spec["devices"] = Json::parse(devices);
  if (!counters.empty()) spec["sharedCounters"] = Json::parse(counters);
  absl::StatusOr<kubeapi::ResourceSlice> slice =
      kubeapi::DecodeResourceSlice({{"metadata", {{"name", name}}}, {"spec", spec}});
  EXPECT_TRUE(slice.ok()) << slice.status();
  return std::make_shared<const kubeapi::ResourceSlice>(slice.value_or(kubeapi::ResourceSlice{}));
}

inline Node Node1() { return Node{"node-1", {{"region", "region-1"}}}; }

// The devices allocated to each request, as "request=device" in result order.
inline std::vector<std::string> Picks(const kubeapi::AllocationResult& result) {
  std::vector<std::string> out;
  for (const auto& item : result.results) out.push_back(item.request + "=" + item.device);
  return out;
}

}  // namespace devmgr::structured::test_inputs
