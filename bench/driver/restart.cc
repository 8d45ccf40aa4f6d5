// Restart: a daemon starting over a large checkpoint, until PodResources answers.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/driver/harness.h"
#include "bench/driver/measurements.h"
#include "checkpoint/checkpoint.h"
#include "common/file_store.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace devmgr::bench {
namespace {

namespace fs = std::filesystem;

}  // namespace

absl::Status MeasureRestart(const fs::path& root, const Options& flags, std::vector<Row>& rows) {
  checkpoint::CheckpointData data;
  const std::string resource = Resource("restart");
  std::vector<std::string>& registered = data.registered_devices[resource];
  for (int i = 0; i < flags.checkpoint_entries; ++i) {
    const std::string device = absl::StrCat("restart-", i);
    data.pod_device_entries.push_back({absl::StrCat("restart-pod-", i),
                                       "c0",
                                       resource,
                                       {{-1, {device}}},
                                       v1beta1::ContainerAllocateResponse().SerializeAsString()});
    registered.push_back(device);
  }
  const fs::path folder = root / "device-plugins";
  fs::create_directories(folder);
  const FileStore store(folder);
  if (absl::Status status = store.Write("kubelet_internal_checkpoint", checkpoint::Encode(data));
      !status.ok()) {
    return status;
  }
  const int rounds = std::min(flags.samples, 5);
  std::vector<double> measured;
  for (int round = 0; round < rounds; ++round) {
    const auto start = Clock::now();
    auto daemon = BenchDaemon::Start(root, kStartTimeout);
    if (!daemon.ok()) return daemon.status();
    measured.push_back(MicrosSince(start));
  }
  std::vector<double> floor;
  for (int round = 0; round < flags.samples; ++round) {
    const auto start = Clock::now();
    auto bytes = ReadWholeFile(folder / "kubelet_internal_checkpoint");
    if (!bytes.ok()) return bytes.status();
    auto decoded = checkpoint::Decode(*bytes);
    if (!decoded.ok()) return decoded.status();
    if (decoded->pod_device_entries.size() != static_cast<size_t>(flags.checkpoint_entries)) {
      return absl::InternalError("the daemon lost checkpoint entries across restarts");
    }
    floor.push_back(MicrosSince(start));
  }
  rows.push_back(Timed(
      absl::StrCat("restart, ", flags.checkpoint_entries, "-entry checkpoint, to PodResources"),
      measured, floor, "read + decode the same checkpoint bytes", 1000, "ms"));
  // The same restart beside a fresh process of this program that reads and verifies the file:
  // what a start pays for the decode (its heap faulted in, caches cold) beside what the warm
  // loop above pays.
  std::vector<double> fresh;
  const std::string checkpoint_path = (folder / "kubelet_internal_checkpoint").string();
  for (int round = 0; round < std::min(flags.samples, 20); ++round) {
    const auto start = Clock::now();
    if (absl::Status verified = RunThisProgram({"checkpoint", "verify", checkpoint_path});
        !verified.ok()) {
      return verified;
    }
    fresh.push_back(MicrosSince(start));
  }
  rows.push_back(Timed(absl::StrCat("restart, ", flags.checkpoint_entries,
                                    "-entry checkpoint, beside a fresh process decoding it"),
                       measured, fresh, "devmgr checkpoint verify of the same file", 1000, "ms"));
  return absl::OkStatus();
}

}  // namespace devmgr::bench
