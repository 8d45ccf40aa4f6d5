// The daemon's pod record, joined from the entries the pod registry keeps at every write, beside
// its floor: one copy of the same bytes into one buffer. Run with malloc set as `devmgr serve`
// sets it, where a record of 10,000 pods (2 MB) is a fresh mapping at every write and faulting
// its pages in is most of the cost: a join that zeroes its result first, or copies it twice,
// pays that again (docs/PERFORMANCE.md, "How cost grows").
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "bench/floor_reporter.h"
#include "node/pod_record.h"
#include "node/process_settings.h"

namespace devmgr::bench {
namespace {

// `pods` entries as the registry keeps them: one-container pods holding one device each.
std::vector<std::string> Entries(int64_t pods) {
  std::vector<std::string> entries;
  entries.reserve(static_cast<size_t>(pods));
  for (int64_t i = 0; i < pods; ++i) {
    node::RecordedPod recorded;
    recorded.pod.uid = absl::StrCat("0b3c5d7e-1f2a-4b6c-8d9e-", 100000000000 + i);
    recorded.pod.namespace_name = "default";
    recorded.pod.name = absl::StrCat("pod-", i);
    devicemanager::Container container;
    container.name = "app";
    container.devices["example.com/gpu"] = 1;
    recorded.pod.containers.push_back(std::move(container));
    recorded.holds_devices = true;
    entries.push_back(node::EncodePodRecordEntry(recorded));
  }
  return entries;
}

void BM_JoinPodRecord(benchmark::State& state) {
  const std::vector<std::string> owned = Entries(state.range(0));
  const std::vector<absl::string_view> entries(owned.begin(), owned.end());
  for (auto _ : state) {
    std::string record = node::JoinPodRecord(entries);
    benchmark::DoNotOptimize(record);
  }
}

void BM_FloorCopyRecordBytes(benchmark::State& state) {
  const std::vector<std::string> owned = Entries(state.range(0));
  const std::vector<absl::string_view> entries(owned.begin(), owned.end());
  const std::string bytes = node::JoinPodRecord(entries);
  for (auto _ : state) {
    std::string record(bytes);
    benchmark::DoNotOptimize(record);
  }
}

BENCHMARK(BM_JoinPodRecord)->Arg(100)->Arg(10000)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FloorCopyRecordBytes)
    ->Arg(100)
    ->Arg(10000)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace devmgr::bench

int main(int argc, char** argv) {
  devmgr::node::LimitMallocArenas();
  return devmgr::bench::RunWithFloors(argc, argv,
                                      {{"BM_JoinPodRecord", "BM_FloorCopyRecordBytes"}});
}
