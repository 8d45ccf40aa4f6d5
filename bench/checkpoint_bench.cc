// The checkpoint's hot paths with 10,000 entries, each beside its floor:
// - encode + checksum + durable write (FileStore) vs. writing the same bytes with
//   write + fsync + rename and nothing else;
// - read + decode + verify vs. reading the same file and parsing it as plain JSON.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "bench/floor_reporter.h"
#include "checkpoint/checkpoint.h"
#include "common/file_store.h"
#include "nlohmann/json.hpp"
#include "tests/testlib/temp_dir.h"

namespace devmgr::bench {
namespace {

using checkpoint::CheckpointData;

// A checkpoint shaped like a busy node's: `entries` allocations of 1-4 devices across two NUMA
// nodes, each with a 30-byte allocate response, and 8 registered resources.
CheckpointData MakeCheckpoint(int64_t entries) {
  std::mt19937 rng(1);
  CheckpointData data;
  data.pod_device_entries.reserve(static_cast<size_t>(entries));
  for (int64_t i = 0; i < entries; ++i) {
    checkpoint::PodDevicesEntry entry;
    entry.pod_uid = "5f1b2c3d-0000-4000-8000-" + std::to_string(100000000000 + i / 4);
    entry.container_name = "container-" + std::to_string(i % 4);
    entry.resource_name = "vendor.com/device-" + std::to_string(i % 8);
    const int devices = 1 + static_cast<int>(rng() % 4);
    for (int d = 0; d < devices; ++d) {
      entry.device_ids[static_cast<int64_t>(rng() % 2)].push_back("dev-" + std::to_string(i) + "-" +
                                                                  std::to_string(d));
    }
    entry.alloc_resp = std::string(30, '\x11');  // opaque to the codec
    data.pod_device_entries.push_back(std::move(entry));
  }
  for (int r = 0; r < 8; ++r) {
    auto& ids = data.registered_devices["vendor.com/device-" + std::to_string(r)];
    for (int d = 0; d < 64; ++d) ids.push_back("dev-" + std::to_string(d));
  }
  return data;
}

void BM_CheckpointWrite(benchmark::State& state) {
  const CheckpointData data = MakeCheckpoint(state.range(0));
  testing::TempDir dir;
  FileStore store(dir.path());
  for (auto _ : state) {
    const std::string bytes = checkpoint::Encode(data);
    if (!store.Write(checkpoint::kCheckpointFileName, bytes).ok()) {
      state.SkipWithError("write failed");
      break;
    }
  }
}

void BM_FloorWriteFsyncRename(benchmark::State& state) {
  const std::string bytes = checkpoint::Encode(MakeCheckpoint(state.range(0)));
  testing::TempDir dir;
  const std::string temp = (dir.path() / ".tmp").string();
  const std::string final_path = (dir.path() / "kubelet_internal_checkpoint").string();
  for (auto _ : state) {
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const bool ok = fd >= 0 &&
                    ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()) &&
                    ::fsync(fd) == 0;
    if (fd >= 0) ::close(fd);
    if (!ok || ::rename(temp.c_str(), final_path.c_str()) != 0) {
      state.SkipWithError("write failed");
      break;
    }
  }
}

void BM_CheckpointRead(benchmark::State& state) {
  testing::TempDir dir;
  FileStore store(dir.path());
  if (!store.Write("cp", checkpoint::Encode(MakeCheckpoint(state.range(0)))).ok()) std::abort();
  for (auto _ : state) {
    absl::StatusOr<std::string> bytes = store.Read("cp");
    absl::StatusOr<CheckpointData> data = checkpoint::Decode(*bytes);
    if (!data.ok()) {
      state.SkipWithError("decode failed");
      break;
    }
    benchmark::DoNotOptimize(data);
  }
}

void BM_FloorReadParseJson(benchmark::State& state) {
  testing::TempDir dir;
  FileStore store(dir.path());
  if (!store.Write("cp", checkpoint::Encode(MakeCheckpoint(state.range(0)))).ok()) std::abort();
  for (auto _ : state) {
    absl::StatusOr<std::string> bytes = store.Read("cp");
    auto json = nlohmann::json::parse(*bytes, nullptr, false);
    benchmark::DoNotOptimize(json);
  }
}

BENCHMARK(BM_CheckpointWrite)->Arg(100)->Arg(10000)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FloorWriteFsyncRename)
    ->Arg(100)
    ->Arg(10000)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CheckpointRead)->Arg(100)->Arg(10000)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FloorReadParseJson)
    ->Arg(100)
    ->Arg(10000)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace devmgr::bench

int main(int argc, char** argv) {
  return devmgr::bench::RunWithFloors(argc, argv,
                                      {{"BM_CheckpointWrite", "BM_FloorWriteFsyncRename"},
                                       {"BM_CheckpointRead", "BM_FloorReadParseJson"}});
}
