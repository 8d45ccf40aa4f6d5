// PodResources under load, on 2 cores:
// - List with 1,000 pods x 4 containers x 2 devices, through the full server (rate limit off),
//   beside its floor: a bare gRPC callback server on a unix socket that answers with the same
//   response, serialised once in advance. Both are read with the same client stub, so the ratio
//   is the cost of building the response from the providers and serialising it. Counters:
//   median latency per call (median_us) and calls per second (items_per_second).
// - Watch: events per second delivered to 10 watchers while pods churn (items: events summed
//   over the watchers), beside the rate of changes made (changes_per_second).
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "bench/driver/pre_serialised_service.h"
#include "bench/floor_reporter.h"
#include "common/unix_socket.h"
#include "devmgr/podresources/v1/api.grpc.pb.h"
#include "podresources/client.h"
#include "podresources/pod_resources.h"
#include "podresources/server.h"
#include "podresources/v1/api.grpc.pb.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::bench {
namespace {

using podresources::Pod;
using podresources::ResourceDeviceInstances;

// A node with `pods` pods of 4 containers, each holding 2 devices on one NUMA node.
class BenchNode final : public podresources::PodsProvider, public podresources::DevicesProvider {
 public:
  explicit BenchNode(int pods) {
    for (int p = 0; p < pods; ++p) {
      Pod pod{"5f1b2c3d-0000-4000-8000-" + std::to_string(100000000000 + p),
              "workload-" + std::to_string(p),
              "team-" + std::to_string(p % 16),
              {},
              {}};
      for (int c = 0; c < 4; ++c) {
        const std::string container = "container-" + std::to_string(c);
        pod.containers.push_back({container, ""});
        for (int d = 0; d < 2; ++d) {
          devices_[{pod.uid, container}]["vendor.example.com/gpu"]
                  ["gpu-" + std::to_string((p * 8 + c * 2 + d) % 4096)] = {d};
        }
      }
      pods_.push_back(std::move(pod));
    }
  }

  // Churn: the devices of pod `p` change to a new pair (for Watch).
  void Move(int p, int generation) {
    absl::MutexLock lock(&mu_);
    auto& devices = devices_[{pods_[static_cast<size_t>(p)].uid, "container-0"}];
    devices.clear();
    devices["vendor.example.com/gpu"]["gpu-gen-" + std::to_string(generation)] = {0};
  }
  const Pod& pod(int p) const { return pods_[static_cast<size_t>(p)]; }

  std::vector<Pod> GetPods() override { return pods_; }
  std::vector<Pod> GetActivePods() override { return pods_; }
  std::optional<Pod> GetPodByName(const std::string&, const std::string&) override {
    return std::nullopt;
  }
  void UpdateAllocatedDevices() override {}
  ResourceDeviceInstances GetDevices(const std::string& pod_uid,
                                     const std::string& container_name) override {
    absl::MutexLock lock(&mu_);
    auto it = devices_.find({pod_uid, container_name});
    return it == devices_.end() ? ResourceDeviceInstances{} : it->second;
  }
  ResourceDeviceInstances GetAllocatableDevices() override { return {}; }

 private:
  std::vector<Pod> pods_;  // fixed after construction
  absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, ResourceDeviceInstances> devices_
      ABSL_GUARDED_BY(mu_);
};

std::unique_ptr<podresources::PodResourcesServer> StartServer(const std::filesystem::path& socket,
                                                              BenchNode& node) {
  podresources::ServerOptions options;
  options.socket_path = socket;
  options.rate_limit.qps = 0;
  options.watch.max_streams_per_client = 64;
  options.watch.resync_period = absl::ZeroDuration();
  auto server = podresources::PodResourcesServer::Create(options, {&node, &node}, nullptr);
  if (!server.ok()) std::abort();
  return *std::move(server);
}

std::shared_ptr<grpc::Channel> Dial(const std::filesystem::path& socket) {
  auto channel = podresources::Dial({socket});
  if (!channel.ok()) std::abort();
  return *channel;
}

// Runs List calls until the benchmark stops; reports the median latency and calls per second.
void RunListLoop(benchmark::State& state, ::v1::PodResourcesLister::Stub& stub) {
  std::vector<double> latencies_us;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    grpc::ClientContext context;
    ::v1::ListPodResourcesResponse response;
    const grpc::Status status = stub.List(&context, {}, &response);
    latencies_us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
    if (!status.ok() || response.pod_resources_size() != state.range(0)) {
      state.SkipWithError("List failed");
      break;
    }
  }
  if (latencies_us.empty()) return;
  std::nth_element(latencies_us.begin(), latencies_us.begin() + latencies_us.size() / 2,
                   latencies_us.end());
  state.counters["median_us"] = latencies_us[latencies_us.size() / 2];
  state.SetItemsProcessed(state.iterations());
}

void BM_List(benchmark::State& state) {
  testing::TempDir dir;
  BenchNode node(static_cast<int>(state.range(0)));
  auto server = StartServer(dir.Sub("kubelet.sock"), node);
  auto stub = ::v1::PodResourcesLister::NewStub(Dial(dir.Sub("kubelet.sock")));
  RunListLoop(state, *stub);
  server->Shutdown();
}

void BM_FloorPreSerialisedList(benchmark::State& state) {
  testing::TempDir dir;
  BenchNode node(static_cast<int>(state.range(0)));
  podresources::Providers providers{&node, &node};
  ::v1::ListPodResourcesResponse response;
  for (const Pod& pod : node.GetActivePods()) {
    podresources::FillPodResources(pod, providers, *response.add_pod_resources());
  }
  PreSerialisedService service(response.SerializeAsString());
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(dir.Sub("floor.sock")), grpc::InsecureServerCredentials());
  builder.RegisterCallbackGenericService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  auto stub = ::v1::PodResourcesLister::NewStub(Dial(dir.Sub("floor.sock")));
  RunListLoop(state, *stub);
  server->Shutdown();
}

// Reads a Watch stream on its own thread and counts what arrives.
class Watcher {
 public:
  explicit Watcher(const std::shared_ptr<grpc::Channel>& channel)
      : stub_(::devmgr::podresources::v1::PodResourcesWatcher::NewStub(channel)),
        reader_(stub_->Watch(&context_, {})) {
    thread_ = std::thread([this] {
      ::devmgr::podresources::v1::WatchResponse event;
      while (reader_->Read(&event)) {
        events_.fetch_add(1, std::memory_order_relaxed);
        revision_.store(event.revision(), std::memory_order_release);
      }
      reader_->Finish();
    });
  }
  ~Watcher() {
    context_.TryCancel();
    thread_.join();
  }
  uint64_t revision() const { return revision_.load(std::memory_order_acquire); }
  uint64_t events() const { return events_.load(std::memory_order_relaxed); }

 private:
  std::unique_ptr<::devmgr::podresources::v1::PodResourcesWatcher::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<::devmgr::podresources::v1::WatchResponse>> reader_;
  std::atomic<uint64_t> revision_{0};
  std::atomic<uint64_t> events_{0};
  std::thread thread_;
};

void BM_WatchChurn(benchmark::State& state) {
  constexpr int kWatchers = 10;
  constexpr int kChangesPerIteration = 1000;
  testing::TempDir dir;
  BenchNode node(static_cast<int>(state.range(0)));
  auto server = StartServer(dir.Sub("kubelet.sock"), node);
  std::shared_ptr<grpc::Channel> channel = Dial(dir.Sub("kubelet.sock"));
  std::vector<std::unique_ptr<Watcher>> watchers;
  for (int w = 0; w < kWatchers; ++w) watchers.push_back(std::make_unique<Watcher>(channel));
  auto all_at = [&](uint64_t revision) {
    return std::all_of(watchers.begin(), watchers.end(),
                       [&](const auto& w) { return w->revision() >= revision; });
  };
  while (!all_at(1)) std::this_thread::yield();  // every watcher has its snapshot
  uint64_t target = watchers[0]->revision();
  int generation = 0;
  uint64_t delivered_before = 0;
  for (const auto& w : watchers) delivered_before += w->events();
  for (auto _ : state) {
    for (int i = 0; i < kChangesPerIteration; ++i) {
      const int p = generation % static_cast<int>(state.range(0));
      node.Move(p, ++generation);
      server->notifier().PodUpdated(node.pod(p));
    }
    // The hub reads each pod when it handles the notification, so changes that pile up on a
    // pod are published once: wait for the revision it reached, not for one per change.
    target = server->hub_for_test().RevisionForTest();
    while (!all_at(target)) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  uint64_t delivered = 0;
  for (const auto& w : watchers) delivered += w->events();
  state.SetItemsProcessed(static_cast<int64_t>(delivered - delivered_before));
  // Changes made per second; the hub publishes fewer when several hit one pod before it reads.
  state.counters["changes_per_second"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kChangesPerIteration, benchmark::Counter::kIsRate);
  watchers.clear();
  server->Shutdown();
}

BENCHMARK(BM_List)->Arg(10)->Arg(1000)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FloorPreSerialisedList)
    ->Arg(10)
    ->Arg(1000)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WatchChurn)->Arg(10)->Arg(1000)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace devmgr::bench

int main(int argc, char** argv) {
  return devmgr::bench::RunWithFloors(argc, argv, {{"BM_List", "BM_FloorPreSerialisedList"}});
}
