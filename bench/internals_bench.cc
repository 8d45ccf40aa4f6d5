// The device manager's internals, each beside its floor in the same run:
// - allocation selection. What picks a container's devices (the free set of the resource built
//   from its healthy devices, split by NUMA affinity, then taken in order) is
//   ManagerImpl::ReserveDevices, a private method; only its split, FilterByAffinity, is public.
//   So it is measured twice:
//   * FilterByAffinity over N free devices on two NUMA nodes, affinity node 0, vs. copying the
//     same N IDs into a new IdSet (the split hands every free ID back in IdSets, so it cannot do
//     less);
//   * one admission of a one-device container through the embeddable devicemanager::Manager
//     (Allocate) with a fake plugin of N devices, vs. what any admission must do: one bare
//     Allocate round trip to the same plugin, one write + fsync + rename of the same checkpoint
//     bytes (read back from the manager's own file; they list every registered device), and
//     one pass over the N healthy IDs, copied out of their IdSet into a vector;
// - taking a ListAndWatch snapshot of N devices in (DevicesFromWire reading the bytes, then the
//   DeviceTable), ordered by ID or shuffled, vs. parsing the same bytes alone with protobuf on
//   an arena (what a client of the generated code must do at least);
// - writing a ListAndWatch snapshot of N devices in the SDK (ListAndWatchBytes, from the
//   DeviceMap a scanner gives) vs. one pass over the map reading what it writes; beside them,
//   what the SDK did before: the protobuf message built, then serialized;
// - pod-devices bookkeeping (PodDevices) with P pods held: one container's allocation inserted
//   and its pod deleted vs. the same insert and erase in a plain std::map keyed by the same
//   (pod UID, container, resource) strings; Holds and HoldsAny vs. a lookup in a std::set of
//   the held device IDs / resource names; ToCheckpoint vs. copying the entries it returns;
//   FromCheckpoint (a restart's restore) of a copy of those entries, in key order and shuffled
//   as a kubelet may write them, vs. the copy alone;
// - run-option merging (MergeRunContainerOptions) of R resources' Allocate responses vs.
//   copying the same R response messages.
// Sizes: N = 100 / 10,000 / 100,000, P = 100 / 10,000, R = 1 / 8 / 64; every name ends in
// "/real_time", so the smoke test's filter "/1/|/100/" picks the smallest of each.
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "bench/floor_reporter.h"
#include "checkpoint/checkpoint.h"
#include "common/file_store.h"
#include "common/unix_socket.h"
#include "devicemanager/device_snapshot.h"
#include "devicemanager/manager.h"
#include "devicemanager/pod_devices.h"
#include "devicemanager/run_options.h"
#include "devicemanager/topology_hints.h"
#include "deviceplugin/device_tree.h"
#include "deviceplugin/list_and_watch_bytes.h"
#include "tests/testlib/fake_device_plugin.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::bench {
namespace {

using devicemanager::Container;
using devicemanager::ContainerAllocation;
using devicemanager::ContainerType;
using devicemanager::Device;
using devicemanager::DeviceTable;
using devicemanager::IdSet;
using devicemanager::NumaMask;
using devicemanager::Pod;
using devicemanager::PodDevices;

// ---- Allocation selection.

constexpr char kResource[] = "bench.example.com/dev";

std::string DeviceId(int64_t i) { return absl::StrCat("dev-", i); }

// `n` devices, alternately on NUMA node 0 and 1.
DeviceTable Devices(int64_t n) {
  std::vector<Device> devices;
  for (int64_t i = 0; i < n; ++i) {
    devices.push_back(Device{DeviceId(i), devicemanager::Health::kHealthy, {i % 2}});
  }
  return DeviceTable(std::move(devices));
}

IdSet Ids(const DeviceTable& devices) {
  std::vector<std::string> ids;
  for (const Device& device : devices) ids.push_back(device.id);
  return IdSet(std::move(ids));
}

void BM_FilterByAffinity(benchmark::State& state) {
  const DeviceTable devices = Devices(state.range(0));
  const IdSet available = Ids(devices);
  const std::optional<NumaMask> affinity = NumaMask{0};
  for (auto _ : state) {
    devicemanager::DevicesByAffinity split =
        devicemanager::FilterByAffinity(available, devices, affinity);
    benchmark::DoNotOptimize(split);
  }
}

void BM_FloorCopyFreeSet(benchmark::State& state) {
  const IdSet available = Ids(Devices(state.range(0)));
  for (auto _ : state) {
    IdSet copy = available;
    benchmark::DoNotOptimize(copy);
  }
}

// The host's topology manager: every container gets NUMA node 0.
class NodeZeroAffinity : public devicemanager::TopologyAffinityStore {
 public:
  std::optional<NumaMask> GetAffinity(absl::string_view /*pod_uid*/,
                                      absl::string_view /*container_name*/) const override {
    return NumaMask{0};
  }
};

// A started manager with one fake plugin of `n` devices on two NUMA nodes, all reported. Only
// the pod last set active is kept: each admission first frees the previous pod's device, so
// the state (and the checkpoint) stays one pod across iterations.
class Node {
 public:
  explicit Node(int64_t n) {
    devicemanager::ManagerOptions options;
    options.plugin_dir = dir_.path();
    options.topology_affinity = &affinity_;
    manager_ = devicemanager::CreateManager(options);
    if (!manager_
             ->Start(
                 [this] {
                   absl::MutexLock lock(&mu_);
                   return std::vector<std::string>{active_};
                 },
                 [] { return true; })
             .ok()) {
      std::abort();
    }
    std::vector<v1beta1::Device> devices;
    devices.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      devices.push_back(testing::MakeDevice(DeviceId(i), true, {i % 2}));
    plugin_ = std::make_unique<testing::FakeDevicePlugin>(dir_.Sub("p.sock"), kResource,
                                                          std::move(devices));
    if (!plugin_->Start().ok() || !plugin_->Register(dir_.Sub("kubelet.sock")).ok()) std::abort();
    while (manager_->GetCapacity().allocatable[kResource] != n) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // Admit makes `uid` the only active pod and allocates one device to its container.
  absl::Status Admit(const std::string& uid) {
    {
      absl::MutexLock lock(&mu_);
      active_ = uid;
    }
    const Pod pod{
        uid, "bench", uid, {}, {Container{"c", ContainerType::kRegular, {{kResource, 1}}}}};
    return manager_->Allocate(pod, pod.containers[0]);
  }

  testing::FakeDevicePlugin& plugin() { return *plugin_; }
  const testing::TempDir& dir() const { return dir_; }

 private:
  testing::TempDir dir_;
  const NodeZeroAffinity affinity_;
  absl::Mutex mu_;
  std::string active_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<testing::FakeDevicePlugin> plugin_;
  // Last: stopped (by its destructor) before the plugin and the affinity store go.
  devicemanager::ManagerPtr manager_;
};

void BM_AllocateFromFree(benchmark::State& state) {
  Node node(state.range(0));
  int64_t i = 0;
  for (auto _ : state) {
    if (!node.Admit(absl::StrCat("pod-", i++)).ok()) {
      state.SkipWithError("admission failed");
      break;
    }
  }
}

void BM_FloorAllocateFromFree(benchmark::State& state) {
  const int64_t n = state.range(0);
  Node node(n);
  // The manager's own checkpoint after one admission: one entry, n registered devices.
  if (!node.Admit("pod-0").ok()) std::abort();
  const absl::StatusOr<std::string> bytes =
      FileStore(node.dir().path()).Read(checkpoint::kCheckpointFileName);
  if (!bytes.ok()) std::abort();
  const IdSet healthy = Ids(Devices(n));
  auto channel =
      grpc::CreateChannel(UnixTarget(node.plugin().socket()), grpc::InsecureChannelCredentials());
  auto stub = v1beta1::DevicePlugin::NewStub(channel);
  const FileStore store(node.dir().Sub("floor"));
  for (auto _ : state) {
    std::vector<std::string> free(healthy.begin(), healthy.end());
    benchmark::DoNotOptimize(free);
    v1beta1::AllocateRequest request;
    request.add_container_requests()->add_devices_ids(free.front());
    v1beta1::AllocateResponse reply;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (!stub->Allocate(&context, request, &reply).ok() ||
        !store.Write(checkpoint::kCheckpointFileName, *bytes).ok()) {
      state.SkipWithError("floor failed");
      break;
    }
  }
}

// ---- Taking a ListAndWatch snapshot in.

// One ListAndWatch message of `n` healthy devices, serialised: ordered by ID as this SDK sends
// them, or shuffled, as a plugin listing its devices from a Go map does.
std::string SnapshotBytes(int64_t n, bool shuffled) {
  std::vector<std::string> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(DeviceId(i));
  std::sort(ids.begin(), ids.end());
  if (shuffled) std::shuffle(ids.begin(), ids.end(), std::mt19937(42));
  v1beta1::ListAndWatchResponse response;
  for (size_t i = 0; i < ids.size(); ++i) {
    *response.add_devices() = testing::MakeDevice(ids[i], true, {static_cast<int64_t>(i % 2)});
  }
  return response.SerializeAsString();
}

void TakeSnapshot(benchmark::State& state, bool shuffled) {
  const std::string bytes = SnapshotBytes(state.range(0), shuffled);
  for (auto _ : state) {
    auto devices = devicemanager::DevicesFromWire(bytes);
    if (!devices.ok()) std::abort();
    devicemanager::DeviceTable table(*std::move(devices));
    benchmark::DoNotOptimize(table);
  }
}

void BM_TakeSnapshot(benchmark::State& state) { TakeSnapshot(state, false); }
void BM_TakeShuffledSnapshot(benchmark::State& state) { TakeSnapshot(state, true); }

void BM_FloorParseSnapshot(benchmark::State& state) {
  const std::string bytes = SnapshotBytes(state.range(0), false);
  for (auto _ : state) {
    google::protobuf::Arena arena;
    auto* response = google::protobuf::Arena::CreateMessage<v1beta1::ListAndWatchResponse>(&arena);
    if (!response->ParseFromString(bytes)) std::abort();
    benchmark::DoNotOptimize(response);
  }
}

// ---- Writing a ListAndWatch snapshot (the SDK's side).

// The map a scanner hands the SDK: `n` healthy devices on one NUMA node each, inserted in the
// order a scanner numbers them (not the map's order, which is the IDs' order as strings).
deviceplugin::DeviceMap SdkDevices(int64_t n) {
  deviceplugin::DeviceMap devices;
  for (int64_t i = 0; i < n; ++i) {
    deviceplugin::DeviceInfo info;
    info.numa_nodes = {i % 2};
    devices.emplace(DeviceId(i), std::move(info));
  }
  return devices;
}

void BM_ListAndWatchBytes(benchmark::State& state) {
  const deviceplugin::DeviceMap devices = SdkDevices(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(deviceplugin::ListAndWatchBytes(devices));
}

// What the SDK did before ListAndWatchBytes: build the message, then serialize it.
void BM_ListAndWatchMessage(benchmark::State& state) {
  const deviceplugin::DeviceMap devices = SdkDevices(state.range(0));
  for (auto _ : state) {
    v1beta1::ListAndWatchResponse message;
    message.mutable_devices()->Reserve(static_cast<int>(devices.size()));
    for (const auto& [id, info] : devices) {
      v1beta1::Device* device = message.add_devices();
      device->set_id(id);
      device->set_health(std::string(deviceplugin::HealthString(info.health)));
      for (int64_t node : info.numa_nodes) device->mutable_topology()->add_nodes()->set_id(node);
    }
    benchmark::DoNotOptimize(message.SerializeAsString());
  }
}

// Any encoder reads every device's ID, health and NUMA nodes once, in the map's order.
void BM_FloorWalkDeviceMap(benchmark::State& state) {
  const deviceplugin::DeviceMap devices = SdkDevices(state.range(0));
  for (auto _ : state) {
    size_t read = 0;
    for (const auto& [id, info] : devices) {
      read += id.size() + static_cast<size_t>(info.health) + info.numa_nodes.size();
    }
    benchmark::DoNotOptimize(read);
  }
}

// ---- Pod-devices bookkeeping.

constexpr char kPodResource[] = "vendor.com/gpu";

std::string PodUid(int64_t i) { return absl::StrCat("5f1b2c3d-0000-4000-8000-", 100000000000 + i); }

// A typical allocation: one device on one NUMA node, a response with two envs and a device node.
ContainerAllocation Allocation(int64_t i) {
  ContainerAllocation allocation;
  allocation.devices[i % 2].push_back(absl::StrCat("gpu-", i));
  (*allocation.response.mutable_envs())["VISIBLE_DEVICES"] = absl::StrCat("gpu-", i);
  (*allocation.response.mutable_envs())["DRIVER"] = "vendor";
  auto* spec = allocation.response.add_devices();
  spec->set_container_path(absl::StrCat("/dev/gpu", i));
  spec->set_host_path(absl::StrCat("/dev/gpu", i));
  spec->set_permissions("rw");
  return allocation;
}

PodDevices HeldPods(int64_t pods) {
  PodDevices result;
  for (int64_t i = 0; i < pods; ++i) result.Insert(PodUid(i), "c", kPodResource, Allocation(i));
  return result;
}

void BM_PodDevicesInsertDelete(benchmark::State& state) {
  const int64_t pods = state.range(0);
  PodDevices pod_devices = HeldPods(pods);
  const std::string uid = PodUid(pods);
  const std::vector<std::string> gone = {uid};
  const ContainerAllocation allocation = Allocation(pods);
  for (auto _ : state) {
    pod_devices.Insert(uid, "c", kPodResource, allocation);
    pod_devices.Delete(gone);
  }
}

void BM_FloorMapInsertErase(benchmark::State& state) {
  const int64_t pods = state.range(0);
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, ContainerAllocation> map;
  for (int64_t i = 0; i < pods; ++i) map.emplace(Key{PodUid(i), "c", kPodResource}, Allocation(i));
  const std::string uid = PodUid(pods);
  const ContainerAllocation allocation = Allocation(pods);
  for (auto _ : state) {
    map.emplace(Key{uid, "c", kPodResource}, allocation);
    map.erase(Key{uid, "c", kPodResource});
  }
}

// Device IDs to look up: every held one and as many free ones, interleaved.
std::vector<std::string> Queries(int64_t pods) {
  std::vector<std::string> ids;
  ids.reserve(static_cast<size_t>(2 * pods));
  for (int64_t i = 0; i < pods; ++i) {
    ids.push_back(absl::StrCat("gpu-", i));
    ids.push_back(absl::StrCat("gpu-", pods + i));
  }
  return ids;
}

void BM_PodDevicesHolds(benchmark::State& state) {
  const PodDevices pod_devices = HeldPods(state.range(0));
  const std::vector<std::string> ids = Queries(state.range(0));
  size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(pod_devices.Holds(kPodResource, ids[k]));
    if (++k == ids.size()) k = 0;
  }
}

void BM_FloorSetFindDevice(benchmark::State& state) {
  std::set<std::string, std::less<>> held;
  for (int64_t i = 0; i < state.range(0); ++i) held.insert(absl::StrCat("gpu-", i));
  const std::vector<std::string> ids = Queries(state.range(0));
  size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(held.contains(ids[k]));
    if (++k == ids.size()) k = 0;
  }
}

// HoldsAny of the held resource and of one nothing holds, alternately.
void BM_PodDevicesHoldsAny(benchmark::State& state) {
  const PodDevices pod_devices = HeldPods(state.range(0));
  const std::string names[2] = {kPodResource, "vendor.com/fpga"};
  size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(pod_devices.HoldsAny(names[k]));
    k ^= 1;
  }
}

void BM_FloorSetFindResource(benchmark::State& state) {
  const std::set<std::string, std::less<>> resources = {kPodResource};
  const std::string names[2] = {kPodResource, "vendor.com/fpga"};
  size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(resources.contains(names[k]));
    k ^= 1;
  }
}

void BM_PodDevicesToCheckpoint(benchmark::State& state) {
  const PodDevices pod_devices = HeldPods(state.range(0));
  for (auto _ : state) {
    std::vector<checkpoint::PodDevicesEntry> entries = pod_devices.ToCheckpoint();
    benchmark::DoNotOptimize(entries);
  }
}

void BM_FloorCopyEntries(benchmark::State& state) {
  const std::vector<checkpoint::PodDevicesEntry> source = HeldPods(state.range(0)).ToCheckpoint();
  for (auto _ : state) {
    std::vector<checkpoint::PodDevicesEntry> entries = source;
    benchmark::DoNotOptimize(entries);
  }
}

// A restart's restore: the entries the checkpoint decoded into (copied, as the floor does),
// taken in by FromCheckpoint, which renders each again for later writes and indexes its devices.
void BM_PodDevicesFromCheckpoint(benchmark::State& state) {
  const std::vector<checkpoint::PodDevicesEntry> source = HeldPods(state.range(0)).ToCheckpoint();
  for (auto _ : state) {
    std::vector<checkpoint::PodDevicesEntry> entries = source;
    PodDevices restored = PodDevices::FromCheckpoint(std::move(entries));
    benchmark::DoNotOptimize(restored);
  }
}

// The same restore from entries in no order, as a kubelet writes its checkpoint.
void BM_PodDevicesFromShuffledCheckpoint(benchmark::State& state) {
  std::vector<checkpoint::PodDevicesEntry> source = HeldPods(state.range(0)).ToCheckpoint();
  std::shuffle(source.begin(), source.end(), std::mt19937(1));
  for (auto _ : state) {
    std::vector<checkpoint::PodDevicesEntry> entries = source;
    PodDevices restored = PodDevices::FromCheckpoint(std::move(entries));
    benchmark::DoNotOptimize(restored);
  }
}

// ---- Run-option merging.

// The Allocate response of resource `r`: three envs of its own plus one every resource sets to
// the same value, two device nodes, a mount, two annotations and a CDI device.
v1beta1::ContainerAllocateResponse Response(int r) {
  v1beta1::ContainerAllocateResponse response;
  auto& envs = *response.mutable_envs();
  envs[absl::StrCat("VENDOR", r, "_VISIBLE_DEVICES")] = absl::StrCat("dev-", r, "-0,dev-", r, "-1");
  envs[absl::StrCat("VENDOR", r, "_DRIVER_CAPABILITIES")] = "compute,utility";
  envs[absl::StrCat("VENDOR", r, "_REQUIRE")] = "driver>=535";
  envs["DEVICE_PLUGIN"] = "bench";
  for (int d = 0; d < 2; ++d) {
    auto* device = response.add_devices();
    device->set_container_path(absl::StrCat("/dev/vendor", r, "-", d));
    device->set_host_path(absl::StrCat("/dev/vendor", r, "-", d));
    device->set_permissions("rw");
  }
  auto* mount = response.add_mounts();
  mount->set_container_path(absl::StrCat("/usr/lib/vendor", r));
  mount->set_host_path(absl::StrCat("/opt/vendor", r, "/lib"));
  mount->set_read_only(true);
  auto& annotations = *response.mutable_annotations();
  annotations[absl::StrCat("vendor", r, ".example.com/devices")] = "2";
  annotations[absl::StrCat("vendor", r, ".example.com/driver")] = "535.104";
  response.add_cdi_devices()->set_name(absl::StrCat("vendor", r, ".example.com/gpu=dev-", r));
  return response;
}

std::vector<v1beta1::ContainerAllocateResponse> Responses(int64_t resources) {
  std::vector<v1beta1::ContainerAllocateResponse> responses;
  responses.reserve(static_cast<size_t>(resources));
  for (int r = 0; r < resources; ++r) responses.push_back(Response(r));
  return responses;
}

void BM_MergeRunContainerOptions(benchmark::State& state) {
  const std::vector<v1beta1::ContainerAllocateResponse> responses = Responses(state.range(0));
  std::vector<std::pair<std::string, const v1beta1::ContainerAllocateResponse*>> input;
  for (size_t r = 0; r < responses.size(); ++r) {
    input.emplace_back(absl::StrCat("vendor", r, ".example.com/gpu"), &responses[r]);
  }
  const LoggerPtr no_logger;
  for (auto _ : state) {
    devicemanager::RunContainerOptions options =
        devicemanager::MergeRunContainerOptions(input, no_logger);
    benchmark::DoNotOptimize(options);
  }
}

void BM_FloorCopyResponses(benchmark::State& state) {
  const std::vector<v1beta1::ContainerAllocateResponse> responses = Responses(state.range(0));
  for (auto _ : state) {
    std::vector<v1beta1::ContainerAllocateResponse> copy = responses;
    benchmark::DoNotOptimize(copy);
  }
}

BENCHMARK(BM_FilterByAffinity)->Arg(100)->Arg(10000)->Arg(100000)->UseRealTime();
BENCHMARK(BM_FloorCopyFreeSet)->Arg(100)->Arg(10000)->Arg(100000)->UseRealTime();
BENCHMARK(BM_AllocateFromFree)
    ->Arg(100)
    ->Arg(10000)
    ->Arg(100000)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FloorAllocateFromFree)
    ->Arg(100)
    ->Arg(10000)
    ->Arg(100000)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TakeSnapshot)->Arg(100)->Arg(10000)->Arg(100000)->UseRealTime();
BENCHMARK(BM_TakeShuffledSnapshot)->Arg(100)->Arg(10000)->Arg(100000)->UseRealTime();
BENCHMARK(BM_FloorParseSnapshot)->Arg(100)->Arg(10000)->Arg(100000)->UseRealTime();
BENCHMARK(BM_ListAndWatchBytes)->Arg(100)->Arg(10000)->Arg(100000)->UseRealTime();
BENCHMARK(BM_ListAndWatchMessage)->Arg(100)->Arg(10000)->Arg(100000)->UseRealTime();
BENCHMARK(BM_FloorWalkDeviceMap)->Arg(100)->Arg(10000)->Arg(100000)->UseRealTime();
BENCHMARK(BM_PodDevicesInsertDelete)->Arg(100)->Arg(10000)->UseRealTime();
BENCHMARK(BM_FloorMapInsertErase)->Arg(100)->Arg(10000)->UseRealTime();
BENCHMARK(BM_PodDevicesHolds)->Arg(100)->Arg(10000)->UseRealTime();
BENCHMARK(BM_FloorSetFindDevice)->Arg(100)->Arg(10000)->UseRealTime();
BENCHMARK(BM_PodDevicesHoldsAny)->Arg(100)->Arg(10000)->UseRealTime();
BENCHMARK(BM_FloorSetFindResource)->Arg(100)->Arg(10000)->UseRealTime();
BENCHMARK(BM_PodDevicesToCheckpoint)->Arg(100)->Arg(10000)->UseRealTime();
BENCHMARK(BM_FloorCopyEntries)->Arg(100)->Arg(10000)->UseRealTime();
BENCHMARK(BM_PodDevicesFromCheckpoint)->Arg(100)->Arg(10000)->UseRealTime();
BENCHMARK(BM_PodDevicesFromShuffledCheckpoint)->Arg(100)->Arg(10000)->UseRealTime();
BENCHMARK(BM_MergeRunContainerOptions)->Arg(1)->Arg(8)->Arg(64)->UseRealTime();
BENCHMARK(BM_FloorCopyResponses)->Arg(1)->Arg(8)->Arg(64)->UseRealTime();

}  // namespace
}  // namespace devmgr::bench

int main(int argc, char** argv) {
  return devmgr::bench::RunWithFloors(
      argc, argv,
      {{"BM_FilterByAffinity", "BM_FloorCopyFreeSet"},
       {"BM_AllocateFromFree", "BM_FloorAllocateFromFree"},
       {"BM_TakeSnapshot", "BM_FloorParseSnapshot"},
       {"BM_TakeShuffledSnapshot", "BM_FloorParseSnapshot"},
       {"BM_ListAndWatchBytes", "BM_FloorWalkDeviceMap"},
       {"BM_ListAndWatchMessage", "BM_FloorWalkDeviceMap"},
       {"BM_PodDevicesInsertDelete", "BM_FloorMapInsertErase"},
       {"BM_PodDevicesHolds", "BM_FloorSetFindDevice"},
       {"BM_PodDevicesHoldsAny", "BM_FloorSetFindResource"},
       {"BM_PodDevicesToCheckpoint", "BM_FloorCopyEntries"},
       {"BM_PodDevicesFromCheckpoint", "BM_FloorCopyEntries"},
       {"BM_PodDevicesFromShuffledCheckpoint", "BM_FloorCopyEntries"},
       {"BM_MergeRunContainerOptions", "BM_FloorCopyResponses"}});
}
