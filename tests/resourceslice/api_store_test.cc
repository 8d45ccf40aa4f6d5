// The ResourceSlice controller publishing to a cluster: the API store over the client against
// the fake API server (tests/testlib/fake_api_server.h), so the requests are real HTTPS with
// the server's rules: index-first generated names, the Node owner's uid looked up, one slice
// rewritten for one changed device, dropped fields reported once, conflicts retried without a
// second copy of any slice, an older API version used as it is.
#include "resourceslice/api_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "resourceslice/controller.h"
#include "tests/testlib/fake_api_server.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::resourceslice {
namespace {

using ::devmgr::testing::FakeApiServer;
using ::devmgr::testing::FakeApiServerOptions;
using ::devmgr::testing::FakeFailure;
using ::devmgr::testing::WaitFor;
using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr char kDriver[] = "gpu.example.com";
constexpr char kNode[] = "worker-1";
constexpr char kNodeUid[] = "4e1f0a4c-node";

std::unique_ptr<kubeclient::Client> Connect(const FakeApiServer& server) {
  absl::StatusOr<std::unique_ptr<kubeclient::Client>> client =
      kubeclient::Client::Create(server.Config());
  EXPECT_TRUE(client.ok()) << client.status();
  return *std::move(client);
}

// `count` devices in slices of `per_slice`, in one pool named after the node.
DriverResources Devices(int count, int per_slice, const std::string& model = "a100") {
  Pool pool;
  for (int i = 0; i < count; ++i) {
    if (i % per_slice == 0) pool.slices.emplace_back();
    kubeapi::Device device;
    device.name = "gpu-" + std::to_string(i);
    device.extra["attributes"] = {{"model", {{"string", model}}}};
    pool.slices.back().devices.push_back(std::move(device));
  }
  DriverResources resources;
  resources.pools[kNode] = std::move(pool);
  return resources;
}

// A controller without a worker: the test runs its syncs.
struct Publisher {
  Publisher(FakeApiServer& server, DriverResources resources)
      : client(Connect(server)), store(*client) {
    ControllerOptions options;
    options.driver_name = kDriver;
    options.store = &store;
    options.owner = Owner{"v1", "Node", kNode, ""};
    options.resources = std::move(resources);
    options.run_worker = false;
    options.error_handler = [this](const ControllerError& error) {
      std::lock_guard<std::mutex> lock(mu);
      errors.push_back(error.ToString());
    };
    absl::StatusOr<std::unique_ptr<Controller>> started = Controller::Start(std::move(options));
    EXPECT_TRUE(started.ok()) << started.status();
    controller = *std::move(started);
    // Pools sync once the controller's watch has read the server.
    EXPECT_TRUE(WaitFor([&] { return controller->Synced(); }));
  }
  std::vector<std::string> Errors() {
    std::lock_guard<std::mutex> lock(mu);
    return errors;
  }

  std::unique_ptr<kubeclient::Client> client;
  ApiSliceStore store;
  std::unique_ptr<Controller> controller;
  std::mutex mu;
  std::vector<std::string> errors;
};

TEST(ApiSliceStoreTest, PublishesAPoolAsAGoDriverWould) {
  FakeApiServer server;
  server.AddNode(kNode, kNodeUid);
  Publisher publisher(server, Devices(300, 128));
  EXPECT_EQ(publisher.controller->ProcessReady(), 1);
  EXPECT_TRUE(publisher.Errors().empty());
  std::vector<Json> slices = server.Slices();
  ASSERT_EQ(slices.size(), 3u);
  std::set<std::string> names;
  for (const Json& slice : slices) {
    const std::string name = slice["metadata"]["name"];
    names.insert(name.substr(0, name.size() - 5));  // the server's random suffix
    EXPECT_EQ(slice["spec"]["nodeName"], kNode);
    EXPECT_EQ(slice["spec"]["pool"]["resourceSliceCount"], 3);
    EXPECT_EQ(slice["metadata"]["ownerReferences"],
              Json::parse(R"([{"apiVersion": "v1", "kind": "Node", "name": "worker-1",
                               "uid": "4e1f0a4c-node", "controller": true}])"));
  }
  EXPECT_EQ(names, (std::set<std::string>{"00000-gpu.example.com-worker-1-",
                                          "00001-gpu.example.com-worker-1-",
                                          "00002-gpu.example.com-worker-1-"}));
  EXPECT_EQ(server.CountRequests("GET", "/api/v1/nodes/worker-1"), 1);
  EXPECT_EQ(publisher.controller->GetStats(), (Stats{3, 0, 0}));

  // Nothing changed: nothing written.
  server.ClearRequests();
  publisher.controller->Resync();
  publisher.controller->ProcessReady();
  EXPECT_EQ(server.CountRequests("PUT", "/"), 0);
  EXPECT_EQ(server.CountRequests("POST", "/"), 0);

  // One device changes: its slice alone is rewritten, the generation stays.
  DriverResources changed = Devices(300, 128);
  changed.pools[kNode].slices[1].devices[5].extra["attributes"]["model"]["string"] = "h100";
  publisher.controller->Update(changed);
  publisher.controller->ProcessReady();
  EXPECT_EQ(server.CountRequests("PUT", "/"), 1);
  EXPECT_EQ(server.CountRequests("POST", "/"), 0);
  EXPECT_EQ(publisher.controller->GetStats(), (Stats{3, 1, 0}));

  // The pool goes: its slices are deleted with their uid and resourceVersion as preconditions.
  publisher.controller->Update(DriverResources{});
  publisher.controller->ProcessReady();
  EXPECT_TRUE(server.Slices().empty());
  for (const auto& request : server.Requests()) {
    if (request.method != "DELETE") continue;
    const Json options = Json::parse(request.body);
    EXPECT_TRUE(options["preconditions"].contains("uid")) << request.body;
    EXPECT_TRUE(options["preconditions"].contains("resourceVersion")) << request.body;
  }
}

TEST(ApiSliceStoreTest, AServerThatDropsTaintsIsReportedOnceNotFoughtWith) {
  FakeApiServerOptions options;
  options.dropped_device_fields = {"taints"};
  FakeApiServer server(options);
  server.AddNode(kNode, kNodeUid);
  DriverResources tainted = Devices(2, 128);
  tainted.pools[kNode].slices[0].devices[0].taints.push_back(
      {"example.com/broken", "", "NoSchedule", std::nullopt, Json::object()});
  Publisher publisher(server, tainted);
  publisher.controller->ProcessReady();
  ASSERT_EQ(publisher.Errors().size(), 1u);
  EXPECT_THAT(publisher.Errors()[0],
              HasSubstr("some fields were dropped by the apiserver, probably because these "
                        "features are disabled: DRADeviceTaints"));
  server.ClearRequests();
  publisher.controller->Resync();
  publisher.controller->ProcessReady();
  EXPECT_EQ(server.CountRequests("PUT", "/"), 0);
  EXPECT_EQ(publisher.Errors().size(), 1u);
}

TEST(ApiSliceStoreTest, TaintsGetTheServersTimeAddedAndAreNotRewritten) {
  FakeApiServer server;
  server.AddNode(kNode, kNodeUid);
  DriverResources tainted = Devices(2, 128);
  tainted.pools[kNode].slices[0].devices[0].taints.push_back(
      {"example.com/broken", "", "NoSchedule", std::nullopt, Json::object()});
  Publisher publisher(server, tainted);
  publisher.controller->ProcessReady();
  ASSERT_EQ(server.Slices().size(), 1u);
  EXPECT_TRUE(server.Slices()[0]["spec"]["devices"][0]["taints"][0].contains("timeAdded"));
  server.ClearRequests();
  publisher.controller->Update(tainted);
  publisher.controller->ProcessReady();
  EXPECT_EQ(server.CountRequests("PUT", "/"), 0);
  EXPECT_TRUE(publisher.Errors().empty());
}

TEST(ApiSliceStoreTest, ConflictsAreRetriedAndNoSliceIsWrittenTwice) {
  FakeApiServer server;
  server.AddNode(kNode, kNodeUid);
  Publisher publisher(server, Devices(3, 128));
  publisher.controller->ProcessReady();
  ASSERT_EQ(server.Slices().size(), 1u);

  server.SetConflictOnEveryUpdate(true);
  publisher.controller->Update(Devices(3, 128, "h100"));
  publisher.controller->ProcessReady();
  ASSERT_FALSE(publisher.Errors().empty());
  EXPECT_THAT(publisher.Errors().back(), HasSubstr("the object has been modified"));
  EXPECT_EQ(server.Slices().size(), 1u);

  // Once the server takes updates again, the next try (after the rate-limited delay) succeeds.
  server.SetConflictOnEveryUpdate(false);
  ASSERT_TRUE(WaitFor([&] {
    publisher.controller->ProcessReady();
    return server.Slices()[0]["spec"]["devices"][0]["attributes"]["model"]["string"] == "h100";
  }));
  EXPECT_EQ(server.Slices().size(), 1u);
  EXPECT_EQ(server.CountRequests("POST", "/"), 1);
}

TEST(ApiSliceStoreTest, PublishesThroughAnOlderApiVersion) {
  FakeApiServerOptions options;
  options.resource_versions = {"v1beta1"};
  FakeApiServer server(options);
  server.AddNode(kNode, kNodeUid);
  Publisher publisher(server, Devices(2, 128));
  publisher.controller->ProcessReady();
  ASSERT_EQ(server.Slices().size(), 1u);
  EXPECT_EQ(server.Slices()[0]["spec"]["devices"][1]["attributes"]["model"]["string"], "a100");
  server.ClearRequests();
  publisher.controller->Resync();
  publisher.controller->ProcessReady();
  EXPECT_EQ(server.CountRequests("PUT", "/"), 0);
}

// Upstream's informer handlers: a slice someone else deletes or changes has its pool synced
// after the sync delay, which puts it back.
TEST(ApiSliceStoreTest, ASliceDeletedBehindTheControllersBackIsPutBack) {
  FakeApiServer server;
  server.AddNode(kNode, kNodeUid);
  std::unique_ptr<kubeclient::Client> client = Connect(server);
  ApiSliceStore store(*client);
  ControllerOptions options;
  options.driver_name = kDriver;
  options.store = &store;
  options.owner = Owner{"v1", "Node", kNode, ""};
  options.resources = Devices(2, 128);
  options.sync_delay = absl::Milliseconds(50);
  absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
  ASSERT_TRUE(controller.ok()) << controller.status();
  ASSERT_TRUE(WaitFor([&] { return server.Slices().size() == 1; }));
  const std::string name = server.Slices()[0]["metadata"]["name"];

  ASSERT_TRUE(server.RemoveSlice(name));
  ASSERT_TRUE(WaitFor([&] { return server.Slices().size() == 1; }));
  EXPECT_NE(server.Slices()[0]["metadata"]["name"], name);

  Json edited = server.Slices()[0];
  edited["spec"]["devices"][0]["attributes"]["model"]["string"] = "edited";
  server.AddSlice(edited);
  ASSERT_TRUE(WaitFor([&] {
    return server.Slices()[0]["spec"]["devices"][0]["attributes"]["model"]["string"] == "a100";
  }));
  EXPECT_EQ((*controller)->GetStats().num_creates, 2);
}

// Upstream's mutation cache: a sync right after a create, before the watch has brought the new
// slice, updates it instead of creating a second one; once the watch catches up, the copy is
// used again.
TEST(ApiSliceStoreTest, ASyncBeforeTheWatchCatchesUpSeesTheControllersOwnWrites) {
  FakeApiServer server;
  server.AddNode(kNode, kNodeUid);
  Publisher publisher(server, Devices(2, 128));
  ASSERT_TRUE(WaitFor([&] { return server.open_watches() == 1; }));
  server.HoldWatches(true);
  publisher.controller->ProcessReady();
  ASSERT_EQ(server.Slices().size(), 1u);
  server.ClearRequests();
  publisher.controller->Update(Devices(2, 128, "h100"));
  publisher.controller->ProcessReady();
  EXPECT_EQ(server.CountRequests("POST", "/"), 0);
  EXPECT_EQ(server.CountRequests("PUT", "/"), 1);
  EXPECT_EQ(server.CountRequests("GET", "/apis/resource.k8s.io/v1/resourceslices?field"), 0)
      << "a sync reads the watch's copy, not the server";
  ASSERT_EQ(server.Slices().size(), 1u);
  EXPECT_EQ(server.Slices()[0]["spec"]["devices"][0]["attributes"]["model"]["string"], "h100");

  server.HoldWatches(false);
  server.ClearRequests();
  publisher.controller->Update(Devices(2, 128, "b200"));
  publisher.controller->ProcessReady();
  EXPECT_EQ(server.CountRequests("POST", "/"), 0);
  EXPECT_EQ(server.CountRequests("PUT", "/"), 1);
  EXPECT_TRUE(publisher.Errors().empty());
  EXPECT_EQ(publisher.controller->GetStats(), (Stats{1, 2, 0}));
}

// Any controller but a node's own selects only the slices without a node name (upstream's
// field selector spec.nodeName=): one that publishes for the whole cluster, or a node's that
// reconciles one pool by name, never sees, and so never deletes, the node-local slices that the
// kubelet plugins of the same driver publish.
TEST(ApiSliceStoreTest, AControllerNotANodesOwnLeavesNodeLocalSlicesAlone) {
  FakeApiServer server;
  server.AddNode(kNode, kNodeUid);
  std::unique_ptr<kubeclient::Client> client = Connect(server);
  ApiSliceStore store(*client);
  kubeapi::ResourceSlice local;
  local.metadata.generate_name = "local-";
  local.spec.driver = kDriver;
  local.spec.node_name = "worker-2";
  local.spec.pool.name = "worker-2";
  local.spec.pool.resource_slice_count = 1;
  ASSERT_TRUE(store.Create(local).ok());
  for (const bool node_owner : {false, true}) {
    SCOPED_TRACE(node_owner ? "a node's, one pool by name" : "without an owner");
    DriverResources resources = Devices(2, 2);
    resources.pools["network"] = std::move(resources.pools[kNode]);
    resources.pools.erase(kNode);
    resources.pools["network"].all_nodes = true;
    ControllerOptions options;
    options.driver_name = kDriver;
    options.store = &store;
    if (node_owner) {
      options.owner = Owner{"v1", "Node", kNode, kNodeUid};
      options.reconcile_pool_with_name = "network";
    }
    options.resources = std::move(resources);
    options.run_worker = false;
    options.sync_delay = absl::ZeroDuration();  // the pools the store reports synced at once
    server.ClearRequests();
    absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
    ASSERT_TRUE(controller.ok()) << controller.status();
    ASSERT_TRUE(WaitFor([&] { return (*controller)->Synced(); }));
    (*controller)->ProcessReady();
    EXPECT_EQ(server.CountRequests("DELETE", "/"), 0);
    int lists = 0;
    for (const auto& request : server.Requests()) {
      if (request.method != "GET" || !absl::StrContains(request.target, "resourceslices?")) {
        continue;
      }
      ++lists;
      constexpr char kSelector[] = "fieldSelector=spec.driver%3Dgpu.example.com%2Cspec.nodeName%3D";
      EXPECT_THAT(request.target, ::testing::AnyOf(::testing::EndsWith(kSelector),
                                                   HasSubstr(absl::StrCat(kSelector, "&"))));
    }
    EXPECT_GT(lists, 0);
  }
  std::vector<Json> slices = server.Slices();
  ASSERT_EQ(slices.size(), 2u) << "the node-local slice and the network pool's";
  EXPECT_EQ(std::count_if(slices.begin(), slices.end(),
                          [](const Json& slice) { return slice["spec"].contains("nodeName"); }),
            1);
}

// At the start the server is listed once, by the controller's watch, whose report of the slices
// it found has their pools synced (here a pool the driver no longer has is removed), as
// upstream's informer's one list. Before, the controller listed the slices a second time itself.
TEST(ApiSliceStoreTest, TheStartListsTheSlicesOnce) {
  FakeApiServer server;
  server.AddNode(kNode, kNodeUid);
  std::unique_ptr<kubeclient::Client> client = Connect(server);
  ApiSliceStore store(*client);
  kubeapi::ResourceSlice old;
  old.metadata.generate_name = "old-";
  old.spec.driver = kDriver;
  old.spec.node_name = kNode;
  old.spec.pool.name = "old-pool";
  old.spec.pool.resource_slice_count = 1;
  ASSERT_TRUE(store.Create(old).ok());
  server.ClearRequests();
  ControllerOptions options;
  options.driver_name = kDriver;
  options.store = &store;
  options.owner = Owner{"v1", "Node", kNode, kNodeUid};
  options.resources = Devices(2, 2);
  options.run_worker = false;
  options.sync_delay = absl::ZeroDuration();  // the pools the watch reports synced at once
  absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
  ASSERT_TRUE(controller.ok()) << controller.status();
  // The watch reports the old slice on its own thread: sync until its pool has been seen to.
  ASSERT_TRUE(WaitFor([&] {
    (*controller)->ProcessReady();
    std::vector<Json> slices = server.Slices();
    return slices.size() == 1u && slices[0]["spec"]["pool"]["name"] == kNode;
  }));
  int lists = 0;
  for (const auto& request : server.Requests()) {
    if (request.method == "GET" && absl::StrContains(request.target, "/resourceslices?") &&
        !absl::StrContains(request.target, "watch=true")) {
      ++lists;
    }
  }
  EXPECT_EQ(lists, 1);
}

// A create the server answers 429 with a Retry-After waits in its retry's pause; Stop ends the
// pause at once, and none of the pool's other slices is written, as upstream's Stop cancels the
// context of its calls. Before, Stop waited the pause out, then sent the retry and the other
// creates.
TEST(ApiSliceStoreTest, StopEndsAWritesRetryPause) {
  FakeApiServer server;
  FakeFailure failure;
  failure.method = "POST";
  failure.code = 429;
  failure.reason = "TooManyRequests";
  failure.retry_after_seconds = 20;
  server.FailNext(failure);
  std::unique_ptr<kubeclient::Client> client = Connect(server);
  ApiSliceStore store(*client);
  std::mutex mu;
  std::vector<std::string> errors;
  ControllerOptions options;
  options.driver_name = kDriver;
  options.store = &store;
  options.owner = Owner{"v1", "Node", kNode, kNodeUid};
  options.resources = Devices(3, 1);
  options.error_handler = [&](const ControllerError& error) {
    std::lock_guard<std::mutex> lock(mu);
    errors.push_back(error.ToString());
  };
  absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
  ASSERT_TRUE(controller.ok()) << controller.status();
  ASSERT_TRUE(WaitFor([&] { return server.CountRequests("POST", "/") == 1; }));
  const absl::Time start = absl::Now();
  (*controller)->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(server.CountRequests("POST", "/"), 1);
  EXPECT_TRUE(server.Slices().empty());
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_THAT(errors, ::testing::IsEmpty()) << "a stop is no failure";
}

TEST(ApiSliceStoreTest, FiltersByDriverNodeAndPool) {
  FakeApiServer server;
  std::unique_ptr<kubeclient::Client> client = Connect(server);
  ApiSliceStore store(*client);
  for (const auto& [driver, node, pool] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"a.example.com", "n1", "p1"},
           {"a.example.com", "n1", "p2"},
           {"a.example.com", "n2", "p1"},
           {"b.example.com", "n1", "p1"}}) {
    kubeapi::ResourceSlice slice;
    slice.metadata.generate_name = "s-";
    slice.spec.driver = driver;
    slice.spec.node_name = node;
    slice.spec.pool.name = pool;
    ASSERT_TRUE(store.Create(slice).ok());
  }
  absl::StatusOr<std::vector<kubeapi::ResourceSlice>> some =
      store.List({"a.example.com", "n1", "p2"});
  ASSERT_TRUE(some.ok()) << some.status();
  ASSERT_EQ(some->size(), 1u);
  EXPECT_EQ((*some)[0].spec.pool.name, "p2");
  ASSERT_TRUE(store.DeleteCollection({"a.example.com", "n1", "p1"}).ok());
  EXPECT_EQ(store.List({})->size(), 3u);
  ASSERT_TRUE(store.DeleteCollection({"", "n1", ""}).ok());
  EXPECT_EQ(store.List({})->size(), 1u);
  // A filter that names no node would reach every node's slices: refused, nothing deleted.
  // Before, a node started with an empty name wiped the whole cluster's slices this way.
  EXPECT_EQ(store.DeleteCollection({"b.example.com", "", ""}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.DeleteCollection({}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.List({})->size(), 1u);
  EXPECT_EQ(store.NodeUid("nope").status().code(), absl::StatusCode::kNotFound);
}

// Upstream's watcher tests (TestFilterSliceWatchByPoolName_FiltersByPoolName,
// TestWrapWatcher_NilMatchPassesAll, TestWrapWatcher_StopClosesResultChan): a watch with a pool
// reports that pool's slices only, one without a pool every slice the server selects, and none
// once the watch is gone.
TEST(ApiSliceStoreTest, AWatchReportsItsPoolsSlicesUntilItEnds) {
  FakeApiServer server;
  std::unique_ptr<kubeclient::Client> client = Connect(server);
  ApiSliceStore store(*client);
  std::mutex mu;
  std::vector<std::string> pool_seen;
  std::vector<std::string> all_seen;
  const auto recorder = [&mu](std::vector<std::string>& seen) {
    return [&mu, &seen](const kubeapi::ResourceSlice* before, const kubeapi::ResourceSlice* after) {
      const kubeapi::ResourceSlice* slice = after != nullptr ? after : before;
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(slice->spec.pool.name + (after == nullptr ? " deleted" : ""));
    };
  };
  const auto seen = [&mu](const std::vector<std::string>& list) {
    std::lock_guard<std::mutex> lock(mu);
    return list;
  };
  std::unique_ptr<SliceWatch> pool_watch =
      store.Watch({"a.example.com", kNode, "p1"}, recorder(pool_seen));
  std::unique_ptr<SliceWatch> all_watch =
      store.Watch({"a.example.com", kNode, ""}, recorder(all_seen));
  ASSERT_NE(pool_watch, nullptr);
  ASSERT_NE(all_watch, nullptr);
  ASSERT_TRUE(WaitFor([&] { return server.open_watches() == 2; }));
  for (const char* pool : {"p2", "p1"}) {
    kubeapi::ResourceSlice slice;
    slice.metadata.generate_name = "s-";
    slice.spec.driver = "a.example.com";
    slice.spec.node_name = kNode;
    slice.spec.pool.name = pool;
    ASSERT_TRUE(store.Create(slice).ok());
  }
  ASSERT_TRUE(WaitFor([&] { return seen(all_seen).size() == 2; }));
  EXPECT_EQ(seen(all_seen), (std::vector<std::string>{"p2", "p1"}));
  ASSERT_TRUE(WaitFor([&] { return !seen(pool_seen).empty(); }));
  EXPECT_EQ(seen(pool_seen), std::vector<std::string>{"p1"});

  pool_watch.reset();
  ASSERT_TRUE(store.DeleteCollection({"a.example.com", kNode, ""}).ok());
  ASSERT_TRUE(WaitFor([&] { return seen(all_seen).size() == 4; }));
  EXPECT_EQ(seen(pool_seen), std::vector<std::string>{"p1"}) << "nothing after its end";
}

// The Node lookup ends when the store's requests are cancelled (a controller's Stop), also while
// it waits out a Retry-After. Before, it could not be cancelled, and a Stop during it waited up
// to ten tries of the server's 30 seconds.
TEST(ApiSliceStoreTest, TheNodeLookupEndsWhenCancelled) {
  FakeApiServer server;
  server.AddNode(kNode, kNodeUid);
  FakeFailure busy;
  busy.method = "GET";
  busy.target_prefix = "/api/v1/nodes/";
  busy.code = 429;
  busy.reason = "TooManyRequests";
  busy.retry_after_seconds = 30;
  busy.times = 10;
  server.FailNext(busy);
  std::unique_ptr<kubeclient::Client> client = Connect(server);
  kubeclient::Cancellation cancel;
  ApiSliceStore store(*client, nullptr, &cancel);
  std::atomic<bool> done{false};
  absl::StatusOr<std::string> uid;
  std::thread lookup([&] {
    uid = store.NodeUid(kNode);
    done = true;
  });
  ASSERT_TRUE(WaitFor([&] { return server.CountRequests("GET", "/api/v1/nodes/") == 1; }));
  cancel.Cancel();
  EXPECT_TRUE(WaitFor([&] { return done.load(); })) << "the lookup waits out the Retry-After";
  lookup.join();
  EXPECT_EQ(uid.status().code(), absl::StatusCode::kCancelled) << uid.status();
}

}  // namespace
}  // namespace devmgr::resourceslice
