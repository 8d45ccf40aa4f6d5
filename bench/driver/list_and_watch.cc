// ListAndWatch: from a plugin's start until the daemon counts its devices healthy.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/driver/harness.h"
#include "bench/driver/measurements.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "podresources/client.h"

namespace devmgr::bench {
namespace {

namespace fs = std::filesystem;

}  // namespace

absl::Status MeasureListAndWatch(const fs::path& root, BenchDaemon& daemon, const Options& flags,
                                 std::vector<Row>& rows) {
  const int rounds = std::min(flags.samples, 11);
  const fs::path floor_root = root / "floor-lw";
  fs::create_directories(floor_root / "device-plugins");
  std::vector<double> measured;
  std::vector<double> floor;
  std::vector<double> decoding;
  // Dials `socket` and decodes the first ListAndWatch message, which must hold every device.
  auto decode = [&flags](const fs::path& socket) -> absl::Status {
    auto channel = podresources::Dial({socket});
    if (!channel.ok()) return channel.status();
    auto stub = v1beta1::DevicePlugin::NewStub(*channel);
    grpc::ClientContext context;
    auto reader = stub->ListAndWatch(&context, {});
    v1beta1::ListAndWatchResponse response;
    const bool full = reader->Read(&response) && response.devices_size() == flags.devices;
    context.TryCancel();
    reader->Finish().IgnoreError();
    if (!full) return absl::InternalError("bare ListAndWatch client: no full snapshot");
    return absl::OkStatus();
  };
  std::unique_ptr<deviceplugin::Plugin> plugin;
  for (int round = 0; round < rounds; ++round) {
    const std::string type = absl::StrCat("lw", round);
    deviceplugin::DeviceTree tree = DeviceTreeOf(type, flags.devices);
    plugin.reset();  // the previous round's, before the clock starts
    const auto start = Clock::now();
    auto started = StartPlugin(root, std::move(tree));
    if (!started.ok()) return started.status();
    plugin = *std::move(started);
    if (absl::Status status = WaitHealthyDevices(daemon, Resource(type), flags.devices);
        !status.ok()) {
      return status;
    }
    measured.push_back(MicrosSince(start));

    const auto decoding_start = Clock::now();
    if (absl::Status status = decode(plugin->SocketPath(type)); !status.ok()) return status;
    decoding.push_back(MicrosSince(decoding_start));

    deviceplugin::DeviceTree floor_tree = DeviceTreeOf(type, flags.devices);
    const auto floor_start = Clock::now();
    auto floor_plugin = StartPlugin(floor_root, std::move(floor_tree));
    if (!floor_plugin.ok()) return floor_plugin.status();
    const fs::path socket = (*floor_plugin)->SocketPath(type);
    const absl::Time deadline = absl::Now() + kStartTimeout;
    while (!fs::exists(socket)) {
      if (absl::Now() > deadline) return absl::DeadlineExceededError("floor plugin: no socket");
      absl::SleepFor(absl::Microseconds(100));
    }
    if (absl::Status status = decode(socket); !status.ok()) return status;
    floor.push_back(MicrosSince(floor_start));
  }
  rows.push_back(Timed(
      absl::StrCat("ListAndWatch ", flags.devices, " devices to allocatable"), measured, floor,
      "bare client starting the same plugin, dialing and decoding its stream", 1000, "ms"));
  rows.push_back(Timed(
      absl::StrCat("ListAndWatch ", flags.devices, " devices, beside decoding"), measured, decoding,
      "bare client dialing the plugin already serving and decoding its stream", 1000, "ms"));
  // The last round's plugin still serves: its devices are the only allocatable ones.
  return MeasureAllocatable(root, daemon, flags, flags.devices, rows);
}

}  // namespace devmgr::bench
