// The DRA manager's prepare path, each beside its floor in the same run:
// - one pod with one claim on one device: PrepareResources (claim lookup, the checkpoint written
//   before and after the driver call, one NodePrepareResources round trip) against one bare
//   NodePrepareResources round trip to the same driver plus one write+fsync+rename of the same
//   dra_manager_state bytes. The manager writes twice (upstream's order, so that a pod deleted
//   while its driver works is found again after a crash): a ratio near 2 is that choice, not
//   overhead.
// - 100 pods with 2 claims each, prepared by 8 threads at once against the same 100 pods
//   prepared one after the other: the ratio is the concurrent time over the serial time.
// Unprepare runs with the timer paused, so every iteration prepares from the same state.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "bench/floor_reporter.h"
#include "common/file_store.h"
#include "dra/checkpoint.h"
#include "dra/driver_client.h"
#include "dra/manager.h"
#include "tests/dra/fake_driver.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::bench {
namespace {

using dra::draapi::v1::NodePrepareResourcesRequest;

constexpr char kDriver[] = "gpu.example.com";

// Claims by namespace/name, set before the timed loops.
class MapClaimSource final : public dra::ClaimSource {
 public:
  void Add(dra::ResourceClaim claim) {
    absl::MutexLock lock(&mu_);
    claims_[claim.name] = std::move(claim);
  }
  absl::StatusOr<dra::ResourceClaim> GetClaim(const std::string&,
                                              const std::string& name) override {
    absl::MutexLock lock(&mu_);
    auto it = claims_.find(name);
    if (it == claims_.end()) return absl::NotFoundError(name);
    return it->second;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, dra::ResourceClaim> claims_ ABSL_GUARDED_BY(mu_);
};

// A driver, a claim source and a manager in a temporary folder, with `pods` pods of
// `claims_per_pod` claims each.
struct Fixture {
  Fixture(int pod_count, int claims_per_pod) {
    driver = std::make_unique<testing::FakeDriver>(dir.Sub("dra.sock").string());
    driver->OnPrepare(
        testing::OneDeviceEach("node", "dev-0", "gpu", absl::StrCat(kDriver, "/gpu")));
    for (int p = 0; p < pod_count; ++p) {
      dra::Pod& pod = pods.emplace_back();
      pod.uid = absl::StrCat("pod-", p);
      pod.namespace_name = "default";
      pod.name = pod.uid;
      dra::Container& container = pod.containers.emplace_back();
      container.name = "app";
      for (int c = 0; c < claims_per_pod; ++c) {
        const std::string name = absl::StrCat(pod.uid, "-claim-", c);
        pod.resource_claims.push_back({name, name, std::nullopt});
        container.claims.push_back({name, ""});
        dra::ResourceClaim claim;
        claim.namespace_name = "default";
        claim.name = name;
        claim.uid = absl::StrCat("uid-", name);
        claim.allocation = std::vector<dra::DeviceRequestAllocationResult>{
            {"gpu", kDriver, "node", "dev-0", std::nullopt}};
        claim.reserved_for.push_back({"", "pods", pod.name, pod.uid});
        claims.Add(std::move(claim));
      }
    }
    dra::ManagerOptions options;
    options.state_dir = dir.path();
    options.claims = &claims;
    absl::StatusOr<std::unique_ptr<dra::Manager>> created = dra::Manager::Create(options);
    if (created.ok()) manager = *std::move(created);
    ok = driver->started() && manager != nullptr &&
         manager->drivers()
             .RegisterPlugin(kDriver, dir.Sub("dra.sock").string(), {"v1.DRAPlugin"})
             .ok();
  }

  testing::TempDir dir;
  std::unique_ptr<testing::FakeDriver> driver;
  MapClaimSource claims;
  std::unique_ptr<dra::Manager> manager;
  std::vector<dra::Pod> pods;
  bool ok = false;
};

void UnprepareAll(benchmark::State& state, Fixture& fixture) {
  for (const dra::Pod& pod : fixture.pods) {
    if (!fixture.manager->UnprepareResources(pod).ok()) state.SkipWithError("unprepare failed");
  }
}

void BM_DraPrepare(benchmark::State& state) {
  Fixture fixture(1, 1);
  if (!fixture.ok) return state.SkipWithError("setup failed");
  for (auto _ : state) {
    if (!fixture.manager->PrepareResources(fixture.pods[0]).ok()) {
      state.SkipWithError("prepare failed");
      break;
    }
    state.PauseTiming();
    UnprepareAll(state, fixture);
    state.ResumeTiming();
  }
}

// The floor: the same driver called once with the same claim, and the state the manager writes
// for it written once with write + fsync + rename.
void BM_FloorDraPrepare(benchmark::State& state) {
  Fixture fixture(1, 1);
  if (!fixture.ok) return state.SkipWithError("setup failed");
  if (!fixture.manager->PrepareResources(fixture.pods[0]).ok()) {
    return state.SkipWithError("prepare failed");
  }
  absl::StatusOr<std::string> bytes = FileStore(fixture.dir.path()).Read(dra::kCheckpointName);
  if (!bytes.ok()) return state.SkipWithError("no checkpoint");
  dra::DriverClient client(kDriver, fixture.dir.Sub("dra.sock").string(), dra::kDraPluginServiceV1,
                           dra::kDefaultCallTimeout);
  NodePrepareResourcesRequest request;
  auto* claim = request.add_claims();
  claim->set_namespace_("default");
  claim->set_uid("uid-pod-0-claim-0");
  claim->set_name("pod-0-claim-0");
  const std::string temp = fixture.dir.Sub(".floor").string();
  const std::string final_path = fixture.dir.Sub("floor_state").string();
  for (auto _ : state) {
    if (!client.NodePrepareResources(request).ok()) {
      state.SkipWithError("call failed");
      break;
    }
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const bool ok =
        fd >= 0 &&
        ::write(fd, bytes->data(), bytes->size()) == static_cast<ssize_t>(bytes->size()) &&
        ::fsync(fd) == 0;
    if (fd >= 0) ::close(fd);
    if (!ok || ::rename(temp.c_str(), final_path.c_str()) != 0) {
      state.SkipWithError("write failed");
      break;
    }
  }
}

// PrepareAll prepares every pod of `fixture` with `threads` threads, pod i on thread i % threads.
bool PrepareAll(Fixture& fixture, int threads) {
  std::atomic<bool> ok{true};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (size_t i = static_cast<size_t>(t); i < fixture.pods.size();
           i += static_cast<size_t>(threads)) {
        if (!fixture.manager->PrepareResources(fixture.pods[i]).ok()) ok = false;
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  return ok;
}

void PrepareManyPods(benchmark::State& state, int threads) {
  Fixture fixture(static_cast<int>(state.range(0)), 2);
  if (!fixture.ok) return state.SkipWithError("setup failed");
  for (auto _ : state) {
    if (!PrepareAll(fixture, threads)) {
      state.SkipWithError("prepare failed");
      break;
    }
    state.PauseTiming();
    UnprepareAll(state, fixture);
    state.ResumeTiming();
  }
  state.counters["pods_per_second"] = benchmark::Counter(
      static_cast<double>(state.iterations() * state.range(0)), benchmark::Counter::kIsRate);
}

void BM_DraPrepareConcurrent(benchmark::State& state) { PrepareManyPods(state, 8); }
void BM_DraPrepareSerial(benchmark::State& state) { PrepareManyPods(state, 1); }

BENCHMARK(BM_DraPrepare)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FloorDraPrepare)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DraPrepareConcurrent)->Arg(100)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DraPrepareSerial)->Arg(100)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace devmgr::bench

int main(int argc, char** argv) {
  return devmgr::bench::RunWithFloors(argc, argv,
                                      {{"BM_DraPrepare", "BM_FloorDraPrepare"},
                                       {"BM_DraPrepareConcurrent", "BM_DraPrepareSerial"}});
}
