// Pod admission, each beside its floor in the same run:
// - admitting a pod with one container and one device (a real fake plugin on a unix socket,
//   the checkpoint written and fsynced) vs. one bare Allocate round trip to the same plugin
//   plus one write + fsync + rename of the same checkpoint bytes;
// - admissions per second with 8 concurrent admitters over 8 resources vs. the same admissions
//   made one after the other (the ratio below 1 is the speedup).
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>

#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "bench/floor_reporter.h"
#include "checkpoint/checkpoint.h"
#include "common/file_store.h"
#include "common/unix_socket.h"
#include "devicemanager/manager.h"
#include "tests/testlib/fake_device_plugin.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::bench {
namespace {

using devicemanager::Container;
using devicemanager::ContainerType;
using devicemanager::CreateManager;
using devicemanager::ManagerOptions;
using devicemanager::ManagerPtr;
using devicemanager::Pod;
using testing::FakeDevicePlugin;

std::string Resource(int i) { return absl::StrCat("bench", i, ".example.com/dev"); }

Pod OnePod(const std::string& uid, const std::string& resource) {
  return Pod{uid, "bench", uid, {}, {Container{"c", ContainerType::kRegular, {{resource, 1}}}}};
}

// A started manager with `resources` plugins of 64 devices each, registered and reported. Only
// the pods in `active` are kept, so the checkpoint stays small across iterations.
class Node {
 public:
  explicit Node(int resources) {
    ManagerOptions options;
    options.plugin_dir = dir_.path();
    manager_ = CreateManager(options);
    if (!manager_
             ->Start(
                 [this] {
                   absl::MutexLock lock(&mu_);
                   return std::vector<std::string>(active_.begin(), active_.end());
                 },
                 [] { return true; })
             .ok()) {
      std::abort();
    }
    for (int i = 0; i < resources; ++i) {
      plugins_.push_back(std::make_unique<FakeDevicePlugin>(dir_.Sub(absl::StrCat("p", i, ".sock")),
                                                            Resource(i), testing::MakeDevices(64)));
      if (!plugins_.back()->Start().ok() ||
          !plugins_.back()->Register(dir_.Sub("kubelet.sock")).ok()) {
        std::abort();
      }
    }
    for (int i = 0; i < resources; ++i) {
      while (manager_->GetCapacity().allocatable[Resource(i)] != 64) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  }

  void SetActive(std::set<std::string> uids) {
    absl::MutexLock lock(&mu_);
    active_ = std::move(uids);
  }

  devicemanager::Manager& manager() { return *manager_; }
  FakeDevicePlugin& plugin(int i) { return *plugins_[static_cast<size_t>(i)]; }
  const testing::TempDir& dir() const { return dir_; }

 private:
  testing::TempDir dir_;
  absl::Mutex mu_;
  std::set<std::string> active_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<FakeDevicePlugin>> plugins_;
  ManagerPtr manager_;
};

void BM_AdmitOneDevice(benchmark::State& state) {
  Node node(1);
  int64_t i = 0;
  for (auto _ : state) {
    const std::string uid = absl::StrCat("pod-", i++);
    node.SetActive({uid});  // the previous pod leaves: its device is freed by this admission
    const Pod pod = OnePod(uid, Resource(0));
    if (!node.manager().Allocate(pod, pod.containers[0]).ok()) {
      state.SkipWithError("admission failed");
      break;
    }
  }
}
BENCHMARK(BM_AdmitOneDevice)->Arg(1)->UseRealTime();

void BM_FloorAdmitOneDevice(benchmark::State& state) {
  Node node(1);
  auto channel =
      grpc::CreateChannel(UnixTarget(node.plugin(0).socket()), grpc::InsecureChannelCredentials());
  auto stub = v1beta1::DevicePlugin::NewStub(channel);
  // The bytes of the same one-pod checkpoint the manager writes.
  checkpoint::CheckpointData data;
  v1beta1::ContainerAllocateResponse response;
  data.pod_device_entries.push_back(
      {"pod-0", "c", Resource(0), {{-1, {"dev0"}}}, response.SerializeAsString()});
  std::vector<std::string> ids;
  for (int d = 0; d < 64; ++d) ids.push_back(absl::StrCat("dev", d));
  data.registered_devices[Resource(0)] = ids;
  const std::string bytes = checkpoint::Encode(data);
  const FileStore store(node.dir().Sub("floor"));
  for (auto _ : state) {
    v1beta1::AllocateRequest request;
    request.add_container_requests()->add_devices_ids("dev0");
    v1beta1::AllocateResponse reply;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (!stub->Allocate(&context, request, &reply).ok() ||
        !store.Write("kubelet_internal_checkpoint", bytes).ok()) {
      state.SkipWithError("floor failed");
      break;
    }
  }
}
BENCHMARK(BM_FloorAdmitOneDevice)->Arg(1)->UseRealTime();

// 256 admissions of one-device pods over 8 resources per iteration, by `threads` admitters.
void AdmitBatch(benchmark::State& state, int threads) {
  constexpr int kResources = 8;
  constexpr int kBatch = 256;
  Node node(kResources);
  int64_t batch = 0;
  for (auto _ : state) {
    std::set<std::string> uids;
    for (int i = 0; i < kBatch; ++i) uids.insert(absl::StrCat("b", batch, "-", i));
    node.SetActive(uids);
    std::atomic<int> next{0};
    std::atomic<bool> failed{false};
    std::vector<std::thread> admitters;
    for (int t = 0; t < threads; ++t) {
      admitters.emplace_back([&] {
        for (int i = next++; i < kBatch; i = next++) {
          Pod pod = OnePod(absl::StrCat("b", batch, "-", i), Resource(i % kResources));
          if (!node.manager().AdmitPod(pod).ok()) failed = true;
        }
      });
    }
    for (auto& admitter : admitters) admitter.join();
    if (failed) {
      state.SkipWithError("admission failed");
      break;
    }
    ++batch;
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void BM_AdmitConcurrent(benchmark::State& state) { AdmitBatch(state, 8); }
void BM_FloorAdmitSerial(benchmark::State& state) { AdmitBatch(state, 1); }
BENCHMARK(BM_AdmitConcurrent)->Arg(8)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FloorAdmitSerial)->Arg(8)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace devmgr::bench

int main(int argc, char** argv) {
  return devmgr::bench::RunWithFloors(argc, argv,
                                      {{"BM_AdmitOneDevice", "BM_FloorAdmitOneDevice"},
                                       {"BM_AdmitConcurrent", "BM_FloorAdmitSerial"}});
}
