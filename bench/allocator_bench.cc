// The DRA allocator (structured/allocator.h) on one node, each row beside its floor in the same
// run:
// - BM_Allocate/DEVICES/REQUESTS: one claim of 1-4 requests (one device each, a class selector
//   and a request selector) under one matchAttribute constraint (all on one NUMA node), on a node
//   with 8 / 64 / 128 / 1,024 devices (slices of at most 128, as drivers publish them). An
//   iteration is what a node pays per admission: the allocator made from the slices, then the
//   search. Counters p50_us and p99_us are the per-iteration latencies.
// - BM_FloorSelectors/DEVICES/REQUESTS: the selectors alone, compiled once and evaluated once per
//   device for the class and once per request, on devices already converted: the work a search
//   with no bookkeeping at all could not avoid.
// - BM_NoSolution/DEVICES/SINGLES: the no-solution worst case, reported separately: SINGLES
//   requests of any one device, then an All request for 16 devices of which another claim holds
//   one. The All request is one device short whatever the others took, so every combination
//   they could take is tried (about DEVICES^SINGLES steps) unless the deadline,
//   kNoSolutionDeadline here, ends the search. Counters say how many steps it took, whether the
//   deadline ended it (deadline_hit) and the worst latency over the deadline (about 1 when the
//   deadline ends the search and holds).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/floor_reporter.h"
#include "cel/program.h"
#include "kubeapi/resource_claim.h"
#include "kubeapi/resource_slice.h"
#include "structured/allocator.h"

namespace devmgr::bench {
namespace {

using Json = nlohmann::json;

constexpr char kDriver[] = "gpu.example.com";
constexpr char kClassSelector[] = "device.driver == \"gpu.example.com\"";
constexpr char kRequestSelector[] =
    "device.attributes[\"gpu.example.com\"].model == \"a100\" && "
    "device.capacity[\"gpu.example.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0";
constexpr int kDevicesPerSlice = 128;
constexpr absl::Duration kNoSolutionDeadline = absl::Seconds(2);

// Device i of `devices`: model a100 but every eighth a t4, on NUMA node 0 (the first half) or 1,
// 40Gi or 80Gi of memory.
int NumaOf(int i, int devices) { return i * 2 / devices; }

Json DeviceJson(int i, int devices) {
  return {{"name", absl::StrCat("gpu-", i)},
          {"attributes",
           {{"model", {{"string", i % 8 == 7 ? "t4" : "a100"}}},
            {"numa", {{"int", NumaOf(i, devices)}}},
            {"index", {{"int", i}}}}},
          {"capacity", {{"memory", {{"value", i % 2 == 0 ? "40Gi" : "80Gi"}}}}}};
}

// The node's pool: `devices` devices in slices of kDevicesPerSlice.
std::vector<kubeapi::ResourceSlicePtr> Slices(int devices) {
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
         {{"driver", kDriver},
          {"nodeName", "node"},
          {"pool", {{"name", "node"}, {"generation", 1}, {"resourceSliceCount", count}}},
          {"devices", list}}}};
    slices.push_back(std::make_shared<const kubeapi::ResourceSlice>(
        kubeapi::DecodeResourceSlice(object).value()));
  }
  return slices;
}

std::vector<kubeapi::DeviceClass> Classes() {
  const Json object = {{"metadata", {{"name", kDriver}}},
                       {"spec", {{"selectors", {{{"cel", {{"expression", kClassSelector}}}}}}}}};
  return {kubeapi::DecodeDeviceClass(object).value()};
}

// `requests` requests "r0".. of one a100 with 40Gi or more each, all on one NUMA node.
kubeapi::ResourceClaim ConstrainedClaim(int requests) {
  Json list = Json::array();
  Json names = Json::array();
  for (int r = 0; r < requests; ++r) {
    names.push_back(absl::StrCat("r", r));
    list.push_back({{"name", names.back()},
                    {"exactly",
                     {{"deviceClassName", kDriver},
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

// `singles` requests of one device each, then an All request for the devices with index < 16,
// of which one is held by another claim (kHeldDevice): whatever the first ones take, the All
// request is one device short.
constexpr int kAllDevices = 16;
constexpr char kHeldDevice[] = "gpu-7";

kubeapi::ResourceClaim OneDeviceShortClaim(int singles) {
  Json requests = Json::array();
  for (int r = 0; r < singles; ++r) {
    requests.push_back(
        {{"name", absl::StrCat("one-", r)}, {"exactly", {{"deviceClassName", kDriver}}}});
  }
  requests.push_back(
      {{"name", "all"},
       {"exactly",
        {{"deviceClassName", kDriver},
         {"allocationMode", "All"},
         {"selectors",
          {{{"cel",
             {{"expression", absl::StrCat("device.attributes[\"gpu.example.com\"].index < ",
                                          kAllDevices)}}}}}}}}});
  const Json object = {
      {"metadata", {{"name", "claim"}, {"namespace", "default"}, {"uid", "uid-claim"}}},
      {"spec", {{"devices", {{"requests", requests}}}}}};
  return kubeapi::DecodeResourceClaim(object).value();
}

// p50 and p99 of `latencies` (seconds) as counters in microseconds.
void ReportLatencies(benchmark::State& state, std::vector<double>& latencies) {
  if (latencies.empty()) return;
  std::sort(latencies.begin(), latencies.end());
  auto at = [&](double q) {
    return latencies[std::min(latencies.size() - 1, static_cast<size_t>(q * latencies.size()))];
  };
  state.counters["p50_us"] = at(0.50) * 1e6;
  state.counters["p99_us"] = at(0.99) * 1e6;
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

void BM_Allocate(benchmark::State& state) {
  const int devices = static_cast<int>(state.range(0));
  const std::vector<kubeapi::ResourceSlicePtr> slices = Slices(devices);
  const std::vector<kubeapi::DeviceClass> classes = Classes();
  const kubeapi::ResourceClaim claim = ConstrainedClaim(static_cast<int>(state.range(1)));
  const structured::Node node{"node", {}};
  std::vector<double> latencies;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<structured::Allocator> allocator =
        structured::Allocator::Create({}, {}, classes, slices);
    auto result = allocator->Allocate(node, {&claim});
    latencies.push_back(Seconds(std::chrono::steady_clock::now() - start));
    if (!result.ok() || !result->has_value()) {
      state.SkipWithError("no allocation");
      return;
    }
    benchmark::DoNotOptimize(result);
  }
  ReportLatencies(state, latencies);
}

// The devices as the selectors see them, converted once.
std::vector<cel::Value> DeviceValues(int devices) {
  std::vector<cel::Value> values;
  for (int i = 0; i < devices; ++i) {
    cel::Device device;
    device.driver = kDriver;
    device.attributes["model"] = cel::Value::String(i % 8 == 7 ? "t4" : "a100");
    device.attributes["numa"] = cel::Value::Int(NumaOf(i, devices));
    device.attributes["index"] = cel::Value::Int(i);
    device.capacity["memory"] = *kubeapi::Quantity::Parse(i % 2 == 0 ? "40Gi" : "80Gi");
    values.push_back(cel::DeviceValue(device));
  }
  return values;
}

void BM_FloorSelectors(benchmark::State& state) {
  const std::vector<cel::Value> devices = DeviceValues(static_cast<int>(state.range(0)));
  const int64_t requests = state.range(1);
  const auto class_selector = cel::Program::Compile(kClassSelector).value();
  const auto request_selector = cel::Program::Compile(kRequestSelector).value();
  std::vector<double> latencies;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    int matched = 0;
    for (const cel::Value& device : devices) {
      matched += class_selector->MatchesValue(device).value_or(false);
      for (int64_t r = 0; r < requests; ++r) {
        matched += request_selector->MatchesValue(device).value_or(false);
      }
    }
    latencies.push_back(Seconds(std::chrono::steady_clock::now() - start));
    benchmark::DoNotOptimize(matched);
  }
  ReportLatencies(state, latencies);
}

void BM_NoSolution(benchmark::State& state) {
  const std::vector<kubeapi::ResourceSlicePtr> slices = Slices(static_cast<int>(state.range(0)));
  const std::vector<kubeapi::DeviceClass> classes = Classes();
  const kubeapi::ResourceClaim claim = OneDeviceShortClaim(static_cast<int>(state.range(1)));
  const structured::Node node{"node", {}};
  structured::AllocatorOptions options;
  options.timeout = kNoSolutionDeadline;
  structured::AllocatedState held;
  held.devices.insert(structured::DeviceID{kDriver, "node", kHeldDevice});
  std::vector<double> latencies;
  int64_t steps = 0;
  bool deadline_hit = false;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<structured::Allocator> allocator =
        structured::Allocator::Create(options, held, classes, slices);
    auto result = allocator->Allocate(node, {&claim});
    latencies.push_back(Seconds(std::chrono::steady_clock::now() - start));
    steps = allocator->stats().allocate_one_calls;
    if (result.ok() && result->has_value()) {
      state.SkipWithError("an allocation where none exists");
      return;
    }
    if (!result.ok() && !absl::IsDeadlineExceeded(result.status())) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    deadline_hit = deadline_hit || !result.ok();
  }
  ReportLatencies(state, latencies);
  state.counters["steps"] = static_cast<double>(steps);
  state.counters["deadline_hit"] = deadline_hit ? 1 : 0;
  state.counters["worst_over_deadline"] = *std::max_element(latencies.begin(), latencies.end()) /
                                          absl::ToDoubleSeconds(kNoSolutionDeadline);
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int devices : {8, 64, 128, 1024}) {
    for (int requests : {1, 2, 3, 4}) b->Args({devices, requests});
  }
}

BENCHMARK(BM_Allocate)->Apply(Sizes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FloorSelectors)->Apply(Sizes)->Unit(benchmark::kMicrosecond);
// Two single requests: about DEVICES^2 steps; three on 1,024 devices: about 10^9, past the
// deadline.
BENCHMARK(BM_NoSolution)
    ->Args({8, 2})
    ->Args({64, 2})
    ->Args({128, 2})
    ->Args({1024, 2})
    ->Args({1024, 3})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace devmgr::bench

int main(int argc, char** argv) {
  return devmgr::bench::RunWithFloors(argc, argv, {{"BM_Allocate", "BM_FloorSelectors"}});
}
