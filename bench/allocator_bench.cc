// The DRA allocator (structured/allocator.h) on one node, each row beside its floor in the same
// run:
// - BM_Allocate/DEVICES/REQUESTS: one claim of 1-4 requests (one device each, a class selector
//   and a request selector) under one matchAttribute constraint (all on one NUMA node), on a node
//   with 8 / 64 / 128 / 1,024 devices (slices of at most 128, as drivers publish them). An
//   iteration is what a node pays per admission: the allocator made from the slices, then the
//   search. Counters p50_us and p99_us are the per-iteration latencies. The node, the claim and
//   both sides of the ratio are those of `devmgr bench`'s allocator rows
//   (bench/driver/allocation_fixture.h), which measure 2 requests.
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
#include "bench/driver/allocation_fixture.h"
#include "bench/floor_reporter.h"
#include "structured/allocator.h"

namespace devmgr::bench {
namespace {

using Json = nlohmann::json;

constexpr absl::Duration kNoSolutionDeadline = absl::Seconds(2);

// `singles` requests of one device each, then an All request for the devices with index < 16,
// of which one is held by another claim (kHeldDevice): whatever the first ones take, the All
// request is one device short.
constexpr int kAllDevices = 16;
constexpr char kHeldDevice[] = "gpu-7";

kubeapi::ResourceClaim OneDeviceShortClaim(int singles) {
  Json requests = Json::array();
  for (int r = 0; r < singles; ++r) {
    requests.push_back(
        {{"name", absl::StrCat("one-", r)}, {"exactly", {{"deviceClassName", kAllocationDriver}}}});
  }
  requests.push_back(
      {{"name", "all"},
       {"exactly",
        {{"deviceClassName", kAllocationDriver},
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
  const std::vector<kubeapi::ResourceSlicePtr> slices = GpuSlices(static_cast<int>(state.range(0)));
  const std::vector<kubeapi::DeviceClass> classes = GpuClass();
  const kubeapi::ResourceClaim claim = ConstrainedClaim(static_cast<int>(state.range(1)));
  std::vector<double> latencies;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const absl::Status allocated = AllocateOnce(slices, classes, claim);
    latencies.push_back(Seconds(std::chrono::steady_clock::now() - start));
    if (!allocated.ok()) {
      state.SkipWithError(std::string(allocated.message()).c_str());
      return;
    }
  }
  ReportLatencies(state, latencies);
}

void BM_FloorSelectors(benchmark::State& state) {
  const SelectorFloor floor(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  std::vector<double> latencies;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const int matched = floor.Evaluate();
    latencies.push_back(Seconds(std::chrono::steady_clock::now() - start));
    benchmark::DoNotOptimize(matched);
  }
  ReportLatencies(state, latencies);
}

void BM_NoSolution(benchmark::State& state) {
  const std::vector<kubeapi::ResourceSlicePtr> slices = GpuSlices(static_cast<int>(state.range(0)));
  const std::vector<kubeapi::DeviceClass> classes = GpuClass();
  const kubeapi::ResourceClaim claim = OneDeviceShortClaim(static_cast<int>(state.range(1)));
  const structured::Node node{"node", {}};
  structured::AllocatorOptions options;
  options.timeout = kNoSolutionDeadline;
  structured::AllocatedState held;
  held.devices.insert(structured::DeviceID{kAllocationDriver, "node", kHeldDevice});
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
