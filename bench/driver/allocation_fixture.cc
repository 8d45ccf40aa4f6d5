#include "bench/driver/allocation_fixture.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "kubeapi/quantity.h"
#include "structured/allocator.h"

namespace devmgr::bench {
namespace {

using Json = nlohmann::json;

constexpr int kDevicesPerSlice = 128;

int NumaOf(int i, int devices) { return i * 2 / devices; }
bool IsT4(int i) { return i % 8 == 7; }
const char* MemoryOf(int i) { return i % 2 == 0 ? "40Gi" : "80Gi"; }

Json DeviceJson(int i, int devices) {
  return {{"name", absl::StrCat("gpu-", i)},
          {"attributes",
           {{"model", {{"string", IsT4(i) ? "t4" : "a100"}}},
            {"numa", {{"int", NumaOf(i, devices)}}},
            {"index", {{"int", i}}}}},
          {"capacity", {{"memory", {{"value", MemoryOf(i)}}}}}};
}

}  // namespace

std::vector<kubeapi::ResourceSlicePtr> GpuSlices(int devices) {
  const int count = std::max(1, (devices + kDevicesPerSlice - 1) / kDevicesPerSlice);
  std::vector<kubeapi::ResourceSlicePtr> slices;
  for (int s = 0; s < count; ++s) {
    Json list = Json::array();
    for (int i = s * kDevicesPerSlice; i < std::min(devices, (s + 1) * kDevicesPerSlice); ++i) {
      list.push_back(DeviceJson(i, devices));
    }
    const Json object = {
        {"metadata", {{"name", absl::StrCat("node-gpu-", s)}}},
        {"spec",
         {{"driver", kAllocationDriver},
          {"nodeName", "node"},
          {"pool", {{"name", "node"}, {"generation", 1}, {"resourceSliceCount", count}}},
          {"devices", list}}}};
    slices.push_back(std::make_shared<const kubeapi::ResourceSlice>(
        kubeapi::DecodeResourceSlice(object).value()));
  }
  return slices;
}

std::vector<kubeapi::DeviceClass> GpuClass() {
  const Json object = {{"metadata", {{"name", kAllocationDriver}}},
                       {"spec", {{"selectors", {{{"cel", {{"expression", kClassSelector}}}}}}}}};
  return {kubeapi::DecodeDeviceClass(object).value()};
}

kubeapi::ResourceClaim ConstrainedClaim(int requests) {
  Json list = Json::array();
  Json names = Json::array();
  for (int r = 0; r < requests; ++r) {
    names.push_back(absl::StrCat("r", r));
    list.push_back({{"name", names.back()},
                    {"exactly",
                     {{"deviceClassName", kAllocationDriver},
                      {"selectors", {{{"cel", {{"expression", kRequestSelector}}}}}}}}});
  }
  const Json object = {
      {"metadata", {{"name", "claim"}, {"namespace", "default"}, {"uid", "uid-claim"}}},
      {"spec",
       {{"devices",
         {{"requests", list},
          {"constraints", {{{"requests", names}, {"matchAttribute", "gpu.example.com/numa"}}}}}}}}};
  return kubeapi::DecodeResourceClaim(object).value();
}

absl::Status AllocateOnce(const std::vector<kubeapi::ResourceSlicePtr>& slices,
                          const std::vector<kubeapi::DeviceClass>& classes,
                          const kubeapi::ResourceClaim& claim) {
  std::unique_ptr<structured::Allocator> allocator =
      structured::Allocator::Create({}, {}, classes, slices);
  auto result = allocator->Allocate(structured::Node{"node", {}}, {&claim});
  if (!result.ok()) return result.status();
  if (!result->has_value()) return absl::NotFoundError("the allocator found no allocation");
  return absl::OkStatus();
}

SelectorFloor::SelectorFloor(int devices, int requests)
    : requests_(requests),
      class_selector_(cel::Program::Compile(kClassSelector).value()),
      request_selector_(cel::Program::Compile(kRequestSelector).value()) {
  for (int i = 0; i < devices; ++i) {
    cel::Device device;
    device.driver = kAllocationDriver;
    device.attributes["model"] = cel::Value::String(IsT4(i) ? "t4" : "a100");
    device.attributes["numa"] = cel::Value::Int(NumaOf(i, devices));
    device.attributes["index"] = cel::Value::Int(i);
    device.capacity["memory"] = *kubeapi::Quantity::Parse(MemoryOf(i));
    devices_.push_back(cel::DeviceValue(device));
  }
}

int SelectorFloor::Evaluate() const {
  int matched = 0;
  for (const cel::Value& device : devices_) {
    matched += class_selector_->MatchesValue(device).value_or(false);
    for (int r = 0; r < requests_; ++r) {
      matched += request_selector_->MatchesValue(device).value_or(false);
    }
  }
  return matched;
}

}  // namespace devmgr::bench
