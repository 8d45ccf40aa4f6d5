// The device manager's ListAndWatch path, each beside its floor in the same run:
// - a snapshot of 10,000 / 100,000 devices, from the plugin's send until the new allocatable is
//   visible through Manager::GetCapacity, vs. the same snapshot streamed by the same plugin to
//   a bare gRPC client that reads and decodes it;
// - a plugin's registration until its first devices are visible through GetCapacity, vs. a bare
//   client dialing the plugin, calling GetDevicePluginOptions and reading the first snapshot.
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/floor_reporter.h"
#include "common/unix_socket.h"
#include "devicemanager/manager.h"
#include "tests/testlib/fake_device_plugin.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::bench {
namespace {

using devicemanager::CapacityResult;
using devicemanager::CreateManager;
using devicemanager::ManagerOptions;
using devicemanager::ManagerPtr;
using testing::FakeDevicePlugin;

constexpr char kResource[] = "bench.example.com/vf";

// `n` devices with 64-byte IDs on two NUMA nodes; the first `unhealthy` are unhealthy.
std::vector<v1beta1::Device> Devices(int n, int unhealthy) {
  std::vector<v1beta1::Device> devices;
  devices.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    std::string id = absl::StrCat("vf-", i, "-");
    id.resize(64, 'x');
    devices.push_back(testing::MakeDevice(id, i >= unhealthy, {i % 2}));
  }
  return devices;
}

int64_t Allocatable(devicemanager::Manager& manager) {
  CapacityResult result = manager.GetCapacity();
  auto it = result.allocatable.find(kResource);
  return it == result.allocatable.end() ? -1 : it->second;
}

ManagerPtr StartManager(const testing::TempDir& dir) {
  ManagerOptions options;
  options.plugin_dir = dir.path();
  ManagerPtr manager = CreateManager(options);
  if (!manager->Start(nullptr, nullptr).ok()) std::abort();
  return manager;
}

void BM_ListAndWatchToCapacity(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  testing::TempDir dir;
  ManagerPtr manager = StartManager(dir);
  const std::vector<v1beta1::Device> snapshots[2] = {Devices(n, 0), Devices(n, 1)};
  FakeDevicePlugin plugin(dir.Sub("p.sock"), kResource, snapshots[0]);
  if (!plugin.Start().ok() || !plugin.Register(dir.Sub("kubelet.sock")).ok()) std::abort();
  while (Allocatable(*manager) != n) {
  }
  int i = 0;
  for (auto _ : state) {
    ++i;
    plugin.SetDevices(snapshots[i % 2]);
    const int64_t expected = n - i % 2;
    while (Allocatable(*manager) != expected) {
    }
  }
  manager->Stop();
}

// The floor: the same plugin streams the same snapshots to a client that only reads them.
void BM_FloorListAndWatchBareClient(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  testing::TempDir dir;
  const std::vector<v1beta1::Device> snapshots[2] = {Devices(n, 0), Devices(n, 1)};
  FakeDevicePlugin plugin(dir.Sub("p.sock"), kResource, snapshots[0]);
  if (!plugin.Start().ok()) std::abort();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(devicemanager::kDefaultMaxMessageBytes);
  auto stub = v1beta1::DevicePlugin::NewStub(grpc::CreateCustomChannel(
      UnixTarget(plugin.socket()), grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext context;
  auto reader = stub->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse response;
  if (!reader->Read(&response)) std::abort();
  int i = 0;
  for (auto _ : state) {
    ++i;
    plugin.SetDevices(snapshots[i % 2]);
    if (!reader->Read(&response)) std::abort();
    int64_t healthy = 0;
    for (const auto& device : response.devices()) healthy += device.health() == "Healthy";
    if (healthy != n - i % 2) std::abort();
  }
  plugin.Stop();
  (void)reader->Finish();
}

void BM_RegistrationToFirstDevices(benchmark::State& state) {
  testing::TempDir dir;
  ManagerPtr manager = StartManager(dir);
  std::unique_ptr<FakeDevicePlugin> slots[2];
  int i = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ++i;
    // Each registration replaces the previous plugin and brings a different device count.
    auto& slot = slots[i % 2];
    slot.reset();
    slot = std::make_unique<FakeDevicePlugin>(dir.Sub(absl::StrCat("p", i % 2, ".sock")), kResource,
                                              Devices(1 + i % 2, 0));
    if (!slot->Start().ok()) std::abort();
    state.ResumeTiming();
    if (!slot->Register(dir.Sub("kubelet.sock")).ok()) std::abort();
    while (Allocatable(*manager) != 1 + i % 2) {
    }
  }
  manager->Stop();
}

void BM_FloorDialOptionsFirstSnapshot(benchmark::State& state) {
  testing::TempDir dir;
  FakeDevicePlugin plugin(dir.Sub("p.sock"), kResource, Devices(1, 0));
  if (!plugin.Start().ok()) std::abort();
  for (auto _ : state) {
    auto channel =
        grpc::CreateChannel(UnixTarget(plugin.socket()), grpc::InsecureChannelCredentials());
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
      std::abort();
    }
    auto stub = v1beta1::DevicePlugin::NewStub(channel);
    grpc::ClientContext options_context;
    v1beta1::DevicePluginOptions options;
    if (!stub->GetDevicePluginOptions(&options_context, v1beta1::Empty(), &options).ok()) {
      std::abort();
    }
    grpc::ClientContext context;
    auto reader = stub->ListAndWatch(&context, v1beta1::Empty());
    v1beta1::ListAndWatchResponse response;
    if (!reader->Read(&response)) std::abort();
    context.TryCancel();
    (void)reader->Finish();
  }
}

BENCHMARK(BM_ListAndWatchToCapacity)
    ->Arg(10000)
    ->Arg(100000)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FloorListAndWatchBareClient)
    ->Arg(10000)
    ->Arg(100000)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RegistrationToFirstDevices)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FloorDialOptionsFirstSnapshot)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace devmgr::bench

int main(int argc, char** argv) {
  return devmgr::bench::RunWithFloors(
      argc, argv,
      {{"BM_ListAndWatchToCapacity", "BM_FloorListAndWatchBareClient"},
       {"BM_RegistrationToFirstDevices", "BM_FloorDialOptionsFirstSnapshot"}});
}
