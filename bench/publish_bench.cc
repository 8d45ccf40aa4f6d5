// Publishing a DRA driver's devices as ResourceSlices to an API server (the fake of
// tests/testlib, over HTTPS on loopback), each beside its floor in the same run:
// - a pool of N devices in slices of 128 published from nothing: the ResourceSlice controller
//   (a list of the driver's slices, then one create per slice) against the same create bodies
//   sent back to back by the bare HTTP transport;
// - one device of a published pool changed: the controller (a list, then one update of the one
//   slice that holds the device) against one bare update of the same slice.
// Each reports the requests it made per iteration (for the controller: its lists, the informer's
// first list, creates or updates; not the informer's watch). The fake server's own work is in
// both sides of each ratio.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/driver/publish_pool.h"
#include "bench/floor_reporter.h"
#include "kubeclient/client.h"
#include "kubeclient/http_transport.h"
#include "resourceslice/api_store.h"
#include "resourceslice/controller.h"
#include "tests/testlib/fake_api_server.h"

namespace devmgr::bench {
namespace {

using Json = nlohmann::json;

constexpr char kDriver[] = "gpu.example.com";
constexpr char kNode[] = "worker-1";

// The fake server with the node, a client and the API store.
struct Cluster {
  Cluster() {
    server.AddNode(kNode, "node-uid");
    client = *kubeclient::Client::Create(server.Config());
    store = std::make_unique<resourceslice::ApiSliceStore>(*client);
    transport = *kubeclient::HttpTransport::Create(server.Config());
  }

  std::unique_ptr<resourceslice::Controller> StartController(
      resourceslice::DriverResources resources) {
    resourceslice::ControllerOptions options;
    options.driver_name = kDriver;
    options.store = store.get();
    options.owner = resourceslice::Owner{"v1", "Node", kNode, "node-uid"};
    options.resources = std::move(resources);
    options.run_worker = false;
    std::unique_ptr<resourceslice::Controller> controller =
        *resourceslice::Controller::Start(std::move(options));
    // Its pools sync once its watch has read the server (the first list, as upstream's informer).
    while (!controller->Synced()) absl::SleepFor(absl::Milliseconds(1));
    return controller;
  }

  void DeleteAll() {
    static_cast<void>(client->DeleteResourceSlices(kubeclient::ListOptions{}));
    server.ClearRequests();
  }

  testing::FakeApiServer server;
  std::unique_ptr<kubeclient::Client> client;
  std::unique_ptr<resourceslice::ApiSliceStore> store;
  std::unique_ptr<kubeclient::HttpTransport> transport;
};

void BM_PublishPool(benchmark::State& state) {
  Cluster cluster;
  const resourceslice::DriverResources resources =
      PublishedPool(static_cast<int>(state.range(0)), kNode);
  size_t requests = 0;
  for (auto _ : state) {
    std::unique_ptr<resourceslice::Controller> controller = cluster.StartController(resources);
    controller->ProcessReady();
    state.PauseTiming();
    requests += static_cast<size_t>(cluster.server.CountRequests("POST", "/") +
                                    cluster.server.CountRequests("GET",
                                                                 "/apis/resource.k8s.io/v1/"
                                                                 "resourceslices?field"));
    controller.reset();
    cluster.DeleteAll();
    state.ResumeTiming();
  }
  state.counters["requests"] =
      benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kAvgIterations);
}

void BM_FloorPublishPool(benchmark::State& state) {
  Cluster cluster;
  // The create bodies the controller sends, recorded once.
  {
    std::unique_ptr<resourceslice::Controller> controller =
        cluster.StartController(PublishedPool(static_cast<int>(state.range(0)), kNode));
    controller->ProcessReady();
  }
  std::vector<kubeclient::HttpRequest> creates;
  for (const testing::FakeRequest& request : cluster.server.Requests()) {
    if (request.method != "POST") continue;
    creates.push_back({request.method, request.target, request.body, absl::Seconds(30)});
  }
  cluster.DeleteAll();
  for (auto _ : state) {
    for (const kubeclient::HttpRequest& request : creates) {
      absl::StatusOr<kubeclient::HttpResponse> response = cluster.transport->Send(request);
      if (!response.ok() || response->code != 201) state.SkipWithError("create failed");
    }
    state.PauseTiming();
    cluster.DeleteAll();
    state.ResumeTiming();
  }
  state.counters["requests"] = benchmark::Counter(static_cast<double>(creates.size()));
}

void BM_PublishOneChange(benchmark::State& state) {
  Cluster cluster;
  const int devices = static_cast<int>(state.range(0));
  std::unique_ptr<resourceslice::Controller> controller =
      cluster.StartController(PublishedPool(devices, kNode));
  controller->ProcessReady();
  resourceslice::DriverResources resources = PublishedPool(devices, kNode);
  kubeapi::Device& changed = resources.pools[kNode].slices.back().devices.back();
  int version = 0;
  size_t requests = 0;
  for (auto _ : state) {
    state.PauseTiming();
    changed.extra["attributes"]["model"]["string"] = absl::StrCat("h", ++version);
    // The driver's new state, made before the clock runs: the controller takes it as it is.
    resourceslice::DriverResources next = resources;
    cluster.server.ClearRequests();
    state.ResumeTiming();
    controller->Update(std::move(next));
    controller->ProcessReady();
    state.PauseTiming();
    requests += static_cast<size_t>(cluster.server.CountRequests("PUT", "/") +
                                    cluster.server.CountRequests("GET",
                                                                 "/apis/resource.k8s.io/v1/"
                                                                 "resourceslices?field"));
    if (cluster.server.CountRequests("PUT", "/") != 1) state.SkipWithError("not one update");
    state.ResumeTiming();
  }
  state.counters["requests"] =
      benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kAvgIterations);
}

void BM_FloorPublishOneChange(benchmark::State& state) {
  Cluster cluster;
  std::unique_ptr<resourceslice::Controller> controller =
      cluster.StartController(PublishedPool(static_cast<int>(state.range(0)), kNode));
  controller->ProcessReady();
  // The slice the change lands in, as stored; each iteration writes it back with a new model.
  Json slice;
  for (const Json& stored : cluster.server.Slices()) {
    if (slice.is_null() || stored["metadata"]["name"].get<std::string>() >
                               slice["metadata"]["name"].get<std::string>()) {
      slice = stored;
    }
  }
  const std::string target = absl::StrCat("/apis/resource.k8s.io/v1/resourceslices/",
                                          slice["metadata"]["name"].get<std::string>());
  int version = 0;
  for (auto _ : state) {
    slice["spec"]["devices"].back()["attributes"]["model"]["string"] = absl::StrCat("h", ++version);
    absl::StatusOr<kubeclient::HttpResponse> response =
        cluster.transport->Send({"PUT", target, slice.dump(), absl::Seconds(30)});
    if (!response.ok() || response->code != 200) {
      state.SkipWithError("update failed");
      break;
    }
    // The next write needs the new resourceVersion: read it as cheaply as possible.
    const std::string& body = response->body;
    const size_t key = body.find("\"resourceVersion\":\"");
    const size_t start = key + 19;
    slice["metadata"]["resourceVersion"] = body.substr(start, body.find('"', start) - start);
  }
  state.counters["requests"] = benchmark::Counter(1);
}

BENCHMARK(BM_PublishPool)->Arg(128)->Arg(10000)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FloorPublishPool)->Arg(128)->Arg(10000)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PublishOneChange)->Arg(128)->Arg(10000)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FloorPublishOneChange)
    ->Arg(128)
    ->Arg(10000)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace devmgr::bench

int main(int argc, char** argv) {
  return devmgr::bench::RunWithFloors(argc, argv,
                                      {{"BM_PublishPool", "BM_FloorPublishPool"},
                                       {"BM_PublishOneChange", "BM_FloorPublishOneChange"}});
}
