// The helper's publishing of ResourceSlices: what goes wrong reaches the driver's error handler,
// as upstream's HandleError.
#include "kubeletplugin/helper.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/unix_socket.h"
#include "dra/driver_client.h"
#include "dra/v1/api.pb.h"
#include "kubeletplugin/call_lock.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "resourceslice/forwarding_store.h"
#include "resourceslice/memory_store.h"
#include "tests/testlib/listening_socket.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::kubeletplugin {
namespace {

using ::devmgr::testing::ListeningSocket;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;
using ::testing::HasSubstr;

// A driver whose unprepare has nothing to let go; each test's driver says how it prepares.
class NothingToUnprepare : public DriverPlugin {
 public:
  absl::StatusOr<std::map<std::string, absl::Status>> UnprepareResourceClaims(
      const std::vector<NamespacedObject>& /*claims*/) override {
    return std::map<std::string, absl::Status>();
  }

 protected:
  // Each claim prepared, with no devices.
  static std::map<std::string, PrepareResult> NoDevices(
      const std::vector<dra::ResourceClaim>& claims) {
    std::map<std::string, PrepareResult> results;
    for (const dra::ResourceClaim& claim : claims) results[claim.uid] = PrepareResult{};
    return results;
  }
};

// A driver that is never asked to prepare anything here.
class IdleDriver final : public NothingToUnprepare {
 public:
  absl::StatusOr<std::map<std::string, PrepareResult>> PrepareResourceClaims(
      const std::vector<dra::ResourceClaim>& /*claims*/) override {
    return std::map<std::string, PrepareResult>();
  }
};

// The options of driver gpu.example.com under `kubelet_dir`, whose claims are never found, for
// node-1 with `store` (null: no publishing).
HelperOptions Options(const std::filesystem::path& kubelet_dir,
                      resourceslice::SliceStore* store = nullptr) {
  HelperOptions options;
  options.driver_name = "gpu.example.com";
  options.kubelet_dir = kubelet_dir;
  options.claim_lookup = [](const std::string&, const std::string&) {
    return absl::StatusOr<dra::ResourceClaim>(absl::NotFoundError("no claims here"));
  };
  options.slice_store = store;
  if (store != nullptr) options.node_name = "node-1";
  return options;
}

TEST(HelperTest, PublishingErrorsReachTheDriversHandler) {
  TempDir dir;
  resourceslice::MemoryStore store;
  store.SetNode("node-1", "node-uid");
  IdleDriver driver;
  absl::Mutex mu;
  std::vector<std::string> errors;
  HelperOptions options = Options(dir.path(), &store);
  options.handle_error = [&](const resourceslice::ControllerError& error) {
    absl::MutexLock lock(&mu);
    errors.push_back(error.ToString());
  };
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  ASSERT_TRUE(helper.ok()) << helper.status();

  // One device listed twice: the pool does not validate.
  resourceslice::DriverResources resources;
  kubeapi::Device device;
  device.name = "gpu-0";
  resources.pools["node-1"].slices.emplace_back().devices = {device, device};
  ASSERT_TRUE((*helper)->PublishResources(resources).ok());
  ASSERT_TRUE(WaitFor([&] {
    absl::MutexLock lock(&mu);
    return !errors.empty();
  }));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(errors[0],
            "pool validation failed: found duplicate device \"gpu-0\" in pool \"node-1\"");
}

// A Node UID the driver gives (upstream's NodeUID option) is the slices' owner's: the store is
// never asked for it. Here it does not know the node, so a lookup would fail the publication.
TEST(HelperTest, AGivenNodeUidOwnsTheSlicesWithoutALookup) {
  TempDir dir;
  resourceslice::MemoryStore store;
  IdleDriver driver;
  HelperOptions options = Options(dir.path(), &store);
  options.node_uid = "given-uid";
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  ASSERT_TRUE(helper.ok()) << helper.status();
  resourceslice::DriverResources resources;
  resources.pools["node-1"].slices.emplace_back().devices.emplace_back().name = "gpu-0";
  ASSERT_TRUE((*helper)->PublishResources(resources).ok());
  absl::StatusOr<std::vector<kubeapi::ResourceSlice>> listed;
  ASSERT_TRUE(WaitFor([&] {
    listed = store.List(resourceslice::SliceFilter{});
    return listed.ok() && listed->size() == 1;
  }));
  ASSERT_EQ((*listed)[0].metadata.owner_references.size(), 1u);
  EXPECT_EQ((*listed)[0].metadata.owner_references[0].uid, "given-uid");
}

// A pool named by reconcile_pool_with_name (upstream's ReconcilePoolWithName) is published
// without nodeName, visible to the nodes its selector picks, and still owned by the Node.
TEST(HelperTest, APoolReconciledByNameIsPublishedWithoutANodeName) {
  TempDir dir;
  resourceslice::MemoryStore store;
  store.SetNode("node-1", "node-uid");
  IdleDriver driver;
  HelperOptions options = Options(dir.path(), &store);
  options.reconcile_pool_with_name = "shared";
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  ASSERT_TRUE(helper.ok()) << helper.status();
  resourceslice::DriverResources resources;
  resourceslice::Pool& pool = resources.pools["shared"];
  pool.all_nodes = true;
  pool.slices.emplace_back().devices.emplace_back().name = "gpu-0";
  ASSERT_TRUE((*helper)->PublishResources(resources).ok());
  absl::StatusOr<std::vector<kubeapi::ResourceSlice>> listed;
  ASSERT_TRUE(WaitFor([&] {
    listed = store.List(resourceslice::SliceFilter{});
    return listed.ok() && listed->size() == 1;
  }));
  const kubeapi::ResourceSlice& slice = (*listed)[0];
  EXPECT_EQ(slice.spec.pool.name, "shared");
  EXPECT_FALSE(slice.spec.node_name.has_value());
  EXPECT_EQ(slice.spec.all_nodes, std::optional<bool>(true));
  ASSERT_EQ(slice.metadata.owner_references.size(), 1u);
  EXPECT_EQ(slice.metadata.owner_references[0].uid, "node-uid");
}

// A driver whose first prepare call waits until the test lets it go.
class HeldDriver final : public NothingToUnprepare {
 public:
  absl::StatusOr<std::map<std::string, PrepareResult>> PrepareResourceClaims(
      const std::vector<dra::ResourceClaim>& claims) override {
    if (calls_.fetch_add(1) == 0) {
      in_first_.Notify();
      release_.WaitForNotification();
    }
    return NoDevices(claims);
  }
  int calls() const { return calls_.load(); }
  absl::Notification in_first_;
  absl::Notification release_;

 private:
  std::atomic<int> calls_{0};
};

::k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesRequest OneClaim(
    const std::string& uid) {
  ::k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesRequest request;
  auto* claim = request.add_claims();
  claim->set_namespace_("default");
  claim->set_name("claim-" + uid);
  claim->set_uid(uid);
  return request;
}

// A driver whose prepare calls each wait until two of them are in it at once (or give up after a
// while, and fail).
class PairedDriver final : public NothingToUnprepare {
 public:
  absl::StatusOr<std::map<std::string, PrepareResult>> PrepareResourceClaims(
      const std::vector<dra::ResourceClaim>& claims) override {
    ++inside_;
    if (!WaitFor([&] { return inside_.load() >= 2; }, std::chrono::seconds(5))) {
      return absl::DeadlineExceededError("the other call never came in");
    }
    return NoDevices(claims);
  }

 private:
  std::atomic<int> inside_{0};
};

// Claims found allocated, each with the UID after its name's "claim-".
absl::StatusOr<dra::ResourceClaim> AllocatedClaim(const std::string& namespace_name,
                                                  const std::string& name) {
  dra::ResourceClaim claim;
  claim.namespace_name = namespace_name;
  claim.name = name;
  claim.uid = name.substr(std::string("claim-").size());
  claim.allocation.emplace();
  return claim;
}

// Without serialisation (upstream's Serialize(false)) the driver's calls run at once: two
// prepares are in the driver together. Serialised, the second waits for the first, which here
// gives up waiting for it.
TEST(HelperTest, WithoutSerialisationTheDriversCallsOverlap) {
  for (const bool serialize : {false, true}) {
    SCOPED_TRACE(serialize ? "serialised" : "not serialised");
    TempDir dir;
    PairedDriver driver;
    HelperOptions options = Options(dir.path());
    options.serialize = serialize;
    options.claim_lookup = AllocatedClaim;
    absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
    ASSERT_TRUE(helper.ok()) << helper.status();
    dra::DriverClient client("gpu.example.com", (*helper)->service_socket().string(),
                             "v1.DRAPlugin", absl::Seconds(30));
    absl::StatusOr<::k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesResponse> first;
    std::thread other([&] { first = client.NodePrepareResources(OneClaim("a")); });
    absl::StatusOr<::k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesResponse> second =
        client.NodePrepareResources(OneClaim("b"));
    other.join();
    EXPECT_EQ(first.ok() && second.ok(), !serialize) << first.status() << " / " << second.status();
  }
}

// Calls that ended while they waited their turn behind a slow one never reach the driver, as
// upstream's handler gives up on its cancelled context. Here the helper's stop ends them after
// its grace (the client sees that, after the server marked them); the kubelet's deadline ends
// them the same way.
TEST(HelperTest, ACallThatEndedWhileItWaitedIsNotGivenToTheDriver) {
  TempDir dir;
  HeldDriver driver;
  HelperOptions options = Options(dir.path());
  options.shutdown_grace = absl::Milliseconds(50);
  options.claim_lookup = AllocatedClaim;
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  ASSERT_TRUE(helper.ok()) << helper.status();
  const std::string socket = (*helper)->service_socket().string();
  dra::DriverClient client("gpu.example.com", socket, "v1.DRAPlugin", absl::Seconds(30));

  std::thread first([&] { (void)client.NodePrepareResources(OneClaim("a")); });
  driver.in_first_.WaitForNotification();
  std::atomic<bool> second_ended{false};
  std::thread second([&] {
    EXPECT_FALSE(client.NodePrepareResources(OneClaim("b")).ok());
    second_ended = true;
  });
  ASSERT_TRUE(WaitFor([&] { return (*helper)->Calls() == 2; })) << "the second call waits";
  std::thread stopper([&] { (*helper)->Stop(); });
  ASSERT_TRUE(WaitFor([&] { return second_ended.load(); }));
  driver.release_.Notify();
  first.join();
  second.join();
  stopper.join();
  EXPECT_EQ(driver.calls(), 1) << "the ended call reached the driver";
  EXPECT_EQ((*helper)->Calls(), 0);
}

// In a rolling update the other pod may hold the lock file for as long as its driver takes. A
// call waiting for it ends at the kubelet's deadline without reaching the driver, and Stop does
// not wait for the other pod. Before, the call waited in a lock that could not be cancelled:
// Stop waited as long as the other pod held the lock, and the driver was then asked to prepare
// for a call that had ended long before.
TEST(HelperTest, ACallWaitingForTheOtherPodsLockEndsWithoutReachingTheDriver) {
  TempDir dir;
  HeldDriver driver;
  driver.release_.Notify();
  HelperOptions options = Options(dir.path());
  options.rolling_update_uid = "pod-new";
  options.shutdown_grace = absl::Milliseconds(50);
  options.claim_lookup = AllocatedClaim;
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  ASSERT_TRUE(helper.ok()) << helper.status();
  CallLock other_pod(dir.path() / "plugins" / "gpu.example.com" / kSerializeLockFile);
  std::optional<absl::StatusOr<CallLock::Guard>> held(other_pod.Lock());
  ASSERT_TRUE(held->ok()) << held->status();
  dra::DriverClient client("gpu.example.com", (*helper)->service_socket().string(), "v1.DRAPlugin",
                           absl::Milliseconds(300));
  EXPECT_EQ(client.NodePrepareResources(OneClaim("a")).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(WaitFor([&] { return (*helper)->Calls() == 0; })) << "the call ended there too";

  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    (*helper)->Stop();
    stopped = true;
  });
  EXPECT_TRUE(WaitFor([&] { return stopped.load(); })) << "Stop waits for the other pod";
  held.reset();
  stopper.join();
  EXPECT_EQ(driver.calls(), 0) << "the ended call reached the driver";
}

// Two threads may stop the helper at once (a signal handler's thread and main, which then
// destroys it): the second returns only when the first has finished, with the driver's call in
// progress ended. Before, it returned at once, and the helper could be destroyed under the first.
TEST(HelperTest, AStopCalledWhileAnotherRunsReturnsWhenItHasFinished) {
  TempDir dir;
  HeldDriver driver;
  HelperOptions options = Options(dir.path());
  options.claim_lookup = AllocatedClaim;
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  ASSERT_TRUE(helper.ok()) << helper.status();
  dra::DriverClient client("gpu.example.com", (*helper)->service_socket().string(), "v1.DRAPlugin",
                           absl::Seconds(30));
  std::thread call([&] { (void)client.NodePrepareResources(OneClaim("a")); });
  driver.in_first_.WaitForNotification();
  std::thread first([&] { (*helper)->Stop(); });
  // The first Stop has begun once the registration socket is gone.
  ASSERT_TRUE(WaitFor([&] { return !std::filesystem::exists((*helper)->registrar_socket()); }));
  std::atomic<bool> second_returned{false};
  std::thread second([&] {
    (*helper)->Stop();
    second_returned = true;
  });
  EXPECT_FALSE(WaitFor([&] { return second_returned.load(); }, std::chrono::milliseconds(200)))
      << "the second Stop returned while the driver was still in a call";
  driver.release_.Notify();
  EXPECT_TRUE(WaitFor([&] { return second_returned.load(); }));
  call.join();
  first.join();
  second.join();
  EXPECT_EQ((*helper)->Calls(), 0);
}

// An empty error text means success on the wire: a driver's error without a message is named by
// its code, so that the kubelet does not take a failed prepare or unprepare for done.
TEST(HelperTest, AClaimsErrorWithoutAMessageIsNotTakenForSuccess) {
  class SilentFailures final : public DriverPlugin {
   public:
    absl::StatusOr<std::map<std::string, PrepareResult>> PrepareResourceClaims(
        const std::vector<dra::ResourceClaim>& claims) override {
      std::map<std::string, PrepareResult> results;
      for (const dra::ResourceClaim& claim : claims) {
        results[claim.uid].error = absl::InternalError("");
      }
      return results;
    }
    absl::StatusOr<std::map<std::string, absl::Status>> UnprepareResourceClaims(
        const std::vector<NamespacedObject>& claims) override {
      std::map<std::string, absl::Status> results;
      for (const NamespacedObject& claim : claims) results[claim.uid] = absl::UnknownError("");
      return results;
    }
  } driver;
  TempDir dir;
  HelperOptions options = Options(dir.path());
  options.claim_lookup = AllocatedClaim;
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  ASSERT_TRUE(helper.ok()) << helper.status();
  dra::DriverClient client("gpu.example.com", (*helper)->service_socket().string(), "v1.DRAPlugin",
                           absl::Seconds(30));
  auto prepared = client.NodePrepareResources(OneClaim("a"));
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->claims().at("a").error(), "the driver failed with INTERNAL and no message");
  ::k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesRequest unprepare;
  *unprepare.add_claims() = OneClaim("a").claims(0);
  auto unprepared = client.NodeUnprepareResources(unprepare);
  ASSERT_TRUE(unprepared.ok()) << unprepared.status();
  EXPECT_EQ(unprepared->claims().at("a").error(), "the driver failed with UNKNOWN and no message");
}

// A prepare whose claim the API server is slow to give holds up neither an unprepare, which
// reads nothing, nor another prepare's read: upstream reads each call's claims in its own
// goroutine, before it serialises the calls. Before, both ran on one thread and the unprepare
// waited for the read; later, the reads had a thread of their own, one at a time, and the other
// prepare waited (each failed at the client's deadline).
TEST(HelperTest, ASlowClaimReadHoldsUpNeitherAnUnprepareNorAnotherPrepare) {
  TempDir dir;
  IdleDriver driver;
  absl::Notification reading_slow;
  absl::Notification answer_slow;
  HelperOptions options = Options(dir.path());
  options.claim_lookup = [&](const std::string&, const std::string& name) {
    if (name == "claim-slow") {
      reading_slow.Notify();
      answer_slow.WaitForNotification();
    }
    return absl::StatusOr<dra::ResourceClaim>(absl::NotFoundError("no claims here"));
  };
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  ASSERT_TRUE(helper.ok()) << helper.status();
  const std::string socket = (*helper)->service_socket().string();
  dra::DriverClient client("gpu.example.com", socket, "v1.DRAPlugin", absl::Seconds(10));

  absl::StatusOr<::k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesResponse> slow;
  std::thread prepare([&] { slow = client.NodePrepareResources(OneClaim("slow")); });
  reading_slow.WaitForNotification();
  ::k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesRequest unprepare;
  auto* claim = unprepare.add_claims();
  claim->set_namespace_("default");
  claim->set_name("claim-b");
  claim->set_uid("b");
  absl::StatusOr<::k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesResponse>
      unprepared = client.NodeUnprepareResources(unprepare);
  absl::StatusOr<::k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesResponse> fast =
      client.NodePrepareResources(OneClaim("fast"));
  answer_slow.Notify();
  prepare.join();
  EXPECT_TRUE(unprepared.ok()) << unprepared.status();
  ASSERT_FALSE(fast.ok());
  EXPECT_THAT(std::string(fast.status().message()),
              HasSubstr("retrieve claim default/claim-fast: no claims here"));
  ASSERT_FALSE(slow.ok());
  EXPECT_THAT(std::string(slow.status().message()),
              HasSubstr("get resource claims: retrieve claim default/claim-slow: no claims here"));
  EXPECT_EQ((*helper)->Calls(), 0);
}

// A store whose List waits until the test lets it go, and that has no watch, as the daemon's
// store over gRPC: the controller's worker lists it (a store with a watch is listed by it).
class SlowListStore final : public resourceslice::ForwardingSliceStore {
 public:
  SlowListStore() : ForwardingSliceStore(store_) {}
  std::unique_ptr<resourceslice::SliceWatch> Watch(
      const resourceslice::SliceFilter& /*filter*/,
      resourceslice::SliceChangeHandler /*on_change*/) override {
    return nullptr;
  }
  absl::StatusOr<std::vector<kubeapi::ResourceSlice>> List(
      const resourceslice::SliceFilter& filter) override {
    listing_.Notify();
    release_.WaitForNotification();
    return ForwardingSliceStore::List(filter);
  }

  resourceslice::MemoryStore store_;
  absl::Notification listing_;
  absl::Notification release_;
};

// The kubelet's registration callback answers at once while the driver's first publication
// waits on the store (the controller's start lists it), as upstream's registration server,
// which takes no lock of the helper's.
TEST(HelperTest, TheRegistrationCallbackDoesNotWaitForAPublication) {
  TempDir dir;
  SlowListStore store;
  store.store_.SetNode("node-1", "node-uid");
  IdleDriver driver;
  std::atomic<int> notified{0};
  HelperOptions options = Options(dir.path(), &store);
  options.on_registration = [&](bool, const std::string&) { ++notified; };
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  ASSERT_TRUE(helper.ok()) << helper.status();

  std::thread publish(
      [&] { EXPECT_TRUE((*helper)->PublishResources(resourceslice::DriverResources{}).ok()); });
  store.listing_.WaitForNotification();
  auto stub = pluginregistration::Registration::NewStub(grpc::CreateChannel(
      UnixTarget((*helper)->registrar_socket()), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  pluginregistration::RegistrationStatusResponse reply;
  const grpc::Status answered = stub->NotifyRegistrationStatus(&context, status, &reply);
  EXPECT_TRUE(answered.ok()) << answered.error_message();
  EXPECT_EQ(notified.load(), 1);
  store.release_.Notify();
  publish.join();
}

// A driver that prepares each claim with two devices of request "gpu" (one named as a
// subrequest) and one of "nic", and unprepares everything.
class TwoRequestDriver final : public DriverPlugin {
 public:
  absl::StatusOr<std::map<std::string, PrepareResult>> PrepareResourceClaims(
      const std::vector<dra::ResourceClaim>& claims) override {
    std::map<std::string, PrepareResult> results;
    for (const dra::ResourceClaim& claim : claims) {
      results[claim.uid].devices = {
          {.requests = {"gpu/large"},
           .pool_name = "node-1",
           .device_name = "gpu-0",
           .cdi_device_ids = {"gpu.example.com/gpu=gpu-0"},
           .metadata = DeviceMetadata{.attributes = {{"model", {{"string", "A100"}}}}}},
          {.requests = {"gpu"}, .pool_name = "node-1", .device_name = "gpu-1"},
          {.requests = {"nic"}, .pool_name = "node-1", .device_name = "nic-0"}};
    }
    return results;
  }
  absl::StatusOr<std::map<std::string, absl::Status>> UnprepareResourceClaims(
      const std::vector<NamespacedObject>& claims) override {
    std::map<std::string, absl::Status> results;
    for (const NamespacedObject& claim : claims) results[claim.uid] = absl::OkStatus();
    return results;
  }
};

// With device metadata on (upstream's EnableDeviceMetadata), a prepared claim's requests each
// get their file and CDI spec, whose CDI device goes with the request's first device only; an
// unprepare takes them away. Off, nothing is written. Without a version it knows, the helper
// does not start.
TEST(HelperTest, DeviceMetadataIsWrittenForEachRequestAndRemovedAtUnprepare) {
  for (const bool enabled : {true, false}) {
    SCOPED_TRACE(enabled ? "enabled" : "disabled");
    TempDir dir;
    TwoRequestDriver driver;
    HelperOptions options = Options(dir.path());
    options.claim_lookup = AllocatedClaim;
    options.device_metadata = enabled;
    options.metadata_versions = {kMetadataV1alpha1};
    options.cdi_dir = dir.Sub("cdi");
    absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
    ASSERT_TRUE(helper.ok()) << helper.status();
    dra::DriverClient client("gpu.example.com", (*helper)->service_socket().string(),
                             "v1.DRAPlugin", absl::Seconds(30));
    absl::StatusOr<::k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesResponse> prepared =
        client.NodePrepareResources(OneClaim("a"));
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    const auto& devices = prepared->claims().at("a").devices();
    ASSERT_EQ(devices.size(), 3);
    std::vector<std::vector<std::string>> ids;
    for (const auto& device : devices) {
      ids.emplace_back(device.cdi_device_ids().begin(), device.cdi_device_ids().end());
    }
    const std::filesystem::path data = dir.path() / "plugins" / "gpu.example.com";
    const std::filesystem::path gpu_file =
        data / "dra-device-metadata" / "default_claim-a" / "gpu" / "metadata.json";
    if (enabled) {
      EXPECT_EQ(ids, (std::vector<std::vector<std::string>>{
                         {"gpu.example.com/gpu=gpu-0", "gpu.example.com/metadata=a_gpu"},
                         {},
                         {"gpu.example.com/metadata=a_nic"}}));
      EXPECT_TRUE(std::filesystem::exists(gpu_file));
      EXPECT_TRUE(std::filesystem::exists(dir.Sub("cdi") / "gpu.example.com_metadata_a_gpu.json"));
      EXPECT_EQ(
          std::filesystem::file_size(dir.Sub("cdi") / "gpu.example.com_metadata_a_nic.json") > 0,
          true);
      const absl::Status updated = (*helper)->UpdateRequestMetadata(
          "default", "claim-a", "a", "nic",
          {{.requests = {"nic"},
            .pool_name = "node-1",
            .device_name = "nic-0",
            .metadata = DeviceMetadata{.network_data = {{"interfaceName", "eth1"}}}}});
      EXPECT_TRUE(updated.ok()) << updated;
    } else {
      EXPECT_EQ(ids,
                (std::vector<std::vector<std::string>>{{"gpu.example.com/gpu=gpu-0"}, {}, {}}));
      EXPECT_FALSE(std::filesystem::exists(data / "dra-device-metadata"));
      EXPECT_FALSE(std::filesystem::exists(dir.Sub("cdi")));
      EXPECT_EQ((*helper)->UpdateRequestMetadata("default", "claim-a", "a", "nic", {}).code(),
                absl::StatusCode::kFailedPrecondition);
    }

    ::k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesRequest unprepare;
    auto* claim = unprepare.add_claims();
    claim->set_namespace_("default");
    claim->set_name("claim-a");
    claim->set_uid("a");
    absl::StatusOr<::k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesResponse>
        unprepared = client.NodeUnprepareResources(unprepare);
    ASSERT_TRUE(unprepared.ok()) << unprepared.status();
    EXPECT_EQ(unprepared->claims().at("a").error(), "");
    EXPECT_FALSE(std::filesystem::exists(gpu_file.parent_path().parent_path()));
    EXPECT_FALSE(std::filesystem::exists(dir.Sub("cdi") / "gpu.example.com_metadata_a_gpu.json"));
  }

  TempDir dir;
  TwoRequestDriver driver;
  HelperOptions options = Options(dir.path());
  options.device_metadata = true;
  EXPECT_EQ(Helper::Start(driver, std::move(options)).status().message(),
            "initialize device metadata: none of the requested metadata API versions [] are "
            "supported");
}

// PublishResources returns at once, as upstream's ("PublishResources does not block"): the
// controller's worker lists the store, here one that answers only when released. Before, the
// controller's start listed it and the driver's call waited as long.
TEST(HelperTest, PublishResourcesDoesNotWaitForTheStore) {
  TempDir dir;
  SlowListStore store;
  store.store_.SetNode("node-1", "node-uid");
  IdleDriver driver;
  absl::StatusOr<std::unique_ptr<Helper>> helper =
      Helper::Start(driver, Options(dir.path(), &store));
  ASSERT_TRUE(helper.ok()) << helper.status();
  std::atomic<bool> returned{false};
  std::thread publish([&] {
    EXPECT_TRUE((*helper)->PublishResources(resourceslice::DriverResources{}).ok());
    returned = true;
  });
  store.listing_.WaitForNotification();
  EXPECT_TRUE(WaitFor([&] { return returned.load(); })) << "it waited for the store's list";
  store.release_.Notify();
  publish.join();
}

// Upstream's TestEndpointLifecycle: serving puts each socket at its path, in the folder asked
// for, and stopping takes it away.
TEST(HelperTest, TestEndpointLifecycle) {
  TempDir dir;
  IdleDriver driver;
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, Options(dir.path()));
  ASSERT_TRUE(helper.ok()) << helper.status();
  const std::filesystem::path service = (*helper)->service_socket();
  const std::filesystem::path registrar = (*helper)->registrar_socket();
  EXPECT_EQ(service.parent_path(), dir.Sub("plugins") / "gpu.example.com");
  EXPECT_EQ(registrar.parent_path(), dir.Sub("plugins_registry"));
  EXPECT_TRUE(IsSocket(service));
  EXPECT_TRUE(IsSocket(registrar));
  EXPECT_TRUE(SomeoneListens(service));
  (*helper)->Stop();
  EXPECT_FALSE(std::filesystem::exists(service));
  EXPECT_FALSE(std::filesystem::exists(registrar));
}

// What a crash or an operator left at a socket's path that is not a socket (a file, an empty
// folder, a symlink) is removed before the socket is put there, as upstream's endpoint removes
// the path before it listens (TestEndpointLifecycle). Before, Start failed ("exists and is not
// a socket") until someone removed it by hand. A folder with something in it stays, and Start
// says why.
TEST(HelperTest, WhatIsNotASocketAtASocketsPathIsRemoved) {
  TempDir dir;
  IdleDriver driver;
  const std::filesystem::path service = dir.Sub("plugins/gpu.example.com/dra.sock");
  const std::filesystem::path registrar = dir.Sub("plugins_registry/gpu.example.com-reg.sock");
  std::filesystem::create_directories(service.parent_path());
  std::filesystem::create_directories(registrar);
  std::ofstream(service) << "stale";
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, Options(dir.path()));
  ASSERT_TRUE(helper.ok()) << helper.status();
  ASSERT_EQ((*helper)->service_socket(), service);
  ASSERT_EQ((*helper)->registrar_socket(), registrar);
  EXPECT_TRUE(SomeoneListens(service));
  EXPECT_TRUE(SomeoneListens(registrar));
  (*helper)->Stop();
  helper->reset();

  std::filesystem::create_symlink(dir.Sub("elsewhere"), service);
  helper = Helper::Start(driver, Options(dir.path()));
  ASSERT_TRUE(helper.ok()) << helper.status();
  EXPECT_TRUE(SomeoneListens(service));
  (*helper)->Stop();
  helper->reset();

  std::filesystem::create_directories(registrar / "kept");
  helper = Helper::Start(driver, Options(dir.path()));
  ASSERT_FALSE(helper.ok());
  EXPECT_EQ(
      helper.status().message(),
      absl::StrCat("start registrar: listen on \"", registrar.string(),
                   "\": remove Unix socket: remove ", registrar.string(), ": directory not empty"));
  EXPECT_TRUE(std::filesystem::exists(registrar / "kept"));
}

// A driver's second instance at the same paths (its pod started before the first one's ended,
// without rolling-update names) takes the sockets over; the first one's Stop leaves them, and
// they still answer. Before, the first one removed them: gRPC unlinks the path it bound, and
// Stop removed whatever socket was there. The last one's Stop removes them, leaving nothing.
TEST(HelperTest, StoppingLeavesTheSocketsANewerInstancePutThere) {
  TempDir dir;
  IdleDriver driver;
  absl::StatusOr<std::unique_ptr<Helper>> first = Helper::Start(driver, Options(dir.path()));
  ASSERT_TRUE(first.ok()) << first.status();
  const std::filesystem::path service = (*first)->service_socket();
  const std::filesystem::path registrar = (*first)->registrar_socket();
  absl::StatusOr<std::unique_ptr<Helper>> second = Helper::Start(driver, Options(dir.path()));
  ASSERT_TRUE(second.ok()) << second.status();

  (*first)->Stop();
  EXPECT_TRUE(SomeoneListens(service));
  EXPECT_TRUE(SomeoneListens(registrar));
  (*second)->Stop();
  EXPECT_FALSE(std::filesystem::exists(service));
  EXPECT_FALSE(std::filesystem::exists(registrar));
  EXPECT_TRUE(testing::EntriesOf(service.parent_path()).empty());
  EXPECT_TRUE(testing::EntriesOf(registrar.parent_path()).empty());
}

// The driver name and the pod UID become folder and file names: names that are not a driver's
// or a UID's are refused before anything is created. Before, "../escape" put a socket folder
// beside plugins/, and a UID with a '/' moved the service socket (and the lock file both pods
// of a rolling update share) into a folder of its own.
TEST(HelperTest, NamesThatAreNoDriversOrUidsAreRefused) {
  TempDir dir;
  IdleDriver driver;
  for (const auto& [name, uid] :
       std::vector<std::pair<std::string, std::string>>{{"../escape", ""},
                                                        {"a/b", ""},
                                                        {"", ""},
                                                        {"gpu.example.com", "a/b"},
                                                        {"gpu.example.com", ".."}}) {
    HelperOptions options = Options(dir.Sub("kubelet"));
    options.driver_name = name;
    options.rolling_update_uid = uid;
    absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
    EXPECT_EQ(helper.status().code(), absl::StatusCode::kInvalidArgument) << name << " " << uid;
    EXPECT_TRUE(testing::EntriesOf(dir.path()).empty()) << name << " " << uid;
  }
}

// In a rolling update, a driver whose registrar path would be exactly 108 bytes (upstream's
// name; Go binds it) starts: the name fits the 107 bytes a socket here has.
TEST(HelperTest, ARollingUpdateWhoseUpstreamNameHas108BytesStarts) {
  TempDir dir;
  IdleDriver driver;
  const std::string uid = "11111111-2222-3333-4444-555555555555";
  const std::filesystem::path registry = dir.path() / "plugins_registry";
  // registry + "/" + driver + "-" + uid + "-reg.sock" is 108 bytes.
  const size_t fixed = registry.string().size() + 1 + 1 + uid.size() + 9;
  ASSERT_LT(fixed + 1, 108u) << "test setup: the temporary folder's path is too long";
  HelperOptions options = Options(dir.path());
  options.driver_name = std::string(108 - fixed, 'd');
  options.rolling_update_uid = uid;
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  ASSERT_TRUE(helper.ok()) << helper.status();
  EXPECT_LE((*helper)->registrar_socket().string().size(), 107u);
}

// The folders upstream's RegistrarDirectoryPath, PluginDataDirectoryPath and FlockDirectoryPath
// name may lie outside the kubelet's root: the sockets and the rolling update's lock go there,
// and the kubelet is told the service socket's absolute path. Before, every path came from
// kubelet_dir.
TEST(HelperTest, TheDriversFoldersMayLieOutsideTheKubeletsRoot) {
  TempDir dir;
  // Two of the folders are given relative to the working folder.
  const std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  const absl::Cleanup back = [&] { std::filesystem::current_path(previous); };
  HeldDriver driver;
  driver.release_.Notify();
  HelperOptions options = Options(dir.Sub("kubelet"));
  options.registry_dir = "registry";
  options.plugin_data_dir = "data";
  options.flock_dir = dir.Sub("locks");
  options.rolling_update_uid = "pod-1";
  options.claim_lookup = AllocatedClaim;
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  ASSERT_TRUE(helper.ok()) << helper.status();
  EXPECT_EQ((*helper)->service_socket(), dir.path() / "data" / "dra-pod-1.sock");
  EXPECT_EQ((*helper)->registrar_socket(),
            dir.path() / "registry" / "gpu.example.com-pod-1-reg.sock");

  auto stub = pluginregistration::Registration::NewStub(grpc::CreateChannel(
      UnixTarget((*helper)->registrar_socket()), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(stub->GetInfo(&context, pluginregistration::InfoRequest(), &info).ok());
  EXPECT_EQ(info.endpoint(), (dir.path() / "data" / "dra-pod-1.sock").string());

  dra::DriverClient client("gpu.example.com", info.endpoint(), "v1.DRAPlugin", absl::Seconds(30));
  ASSERT_TRUE(client.NodePrepareResources(OneClaim("a")).ok());
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "locks" / kSerializeLockFile));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "data" / kSerializeLockFile));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "kubelet"));
}

// A registration socket under a name of the driver's choosing (upstream's
// RegistrarSocketFilename) is served there; with a rolling update, whose name is chosen for it,
// or as anything but a file name, the helper does not start, with upstream's error for the
// first, and creates nothing.
TEST(HelperTest, TheRegistrationSocketTakesTheNameGivenUnlessItCannot) {
  TempDir dir;
  IdleDriver driver;
  HelperOptions named = Options(dir.Sub("kubelet"));
  named.registrar_socket_file = "old-name.sock";
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(named));
  ASSERT_TRUE(helper.ok()) << helper.status();
  EXPECT_EQ((*helper)->registrar_socket(),
            dir.path() / "kubelet" / "plugins_registry" / "old-name.sock");
  EXPECT_TRUE(SomeoneListens((*helper)->registrar_socket()));
  (*helper)->Stop();

  TempDir empty;
  HelperOptions rolling = Options(empty.Sub("kubelet"));
  rolling.registrar_socket_file = "old-name.sock";
  rolling.rolling_update_uid = "pod-1";
  absl::StatusOr<std::unique_ptr<Helper>> refused = Helper::Start(driver, std::move(rolling));
  EXPECT_EQ(refused.status(),
            absl::InvalidArgumentError("rolling updates and explicit registration socket "
                                       "filename are mutually exclusive"));
  for (const std::string file : {"../up.sock", "a/b.sock", ".."}) {
    HelperOptions bad = Options(empty.Sub("kubelet"));
    bad.registrar_socket_file = file;
    EXPECT_EQ(Helper::Start(driver, std::move(bad)).status().code(),
              absl::StatusCode::kInvalidArgument)
        << file;
  }
  EXPECT_TRUE(testing::EntriesOf(empty.path()).empty());
}

// A registration the kubelet reports failed is answered with upstream's error, which the
// kubelet logs; a successful one with OK. The driver hears of both.
TEST(HelperTest, AFailedRegistrationIsAnsweredWithAnError) {
  TempDir dir;
  IdleDriver driver;
  std::vector<std::string> heard;
  HelperOptions options = Options(dir.path());
  options.on_registration = [&](bool registered, const std::string& error) {
    heard.push_back(absl::StrCat(registered, " ", error));
  };
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  ASSERT_TRUE(helper.ok()) << helper.status();
  auto stub = pluginregistration::Registration::NewStub(grpc::CreateChannel(
      UnixTarget((*helper)->registrar_socket()), grpc::InsecureChannelCredentials()));
  for (const bool registered : {false, true}) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    pluginregistration::RegistrationStatus status;
    status.set_plugin_registered(registered);
    if (!registered) status.set_error("endpoint already registered");
    pluginregistration::RegistrationStatusResponse reply;
    const grpc::Status answered = stub->NotifyRegistrationStatus(&context, status, &reply);
    if (registered) {
      EXPECT_TRUE(answered.ok()) << answered.error_message();
    } else {
      EXPECT_EQ(answered.error_code(), grpc::StatusCode::UNKNOWN);
      EXPECT_EQ(answered.error_message(),
                "failed registration process: endpoint already registered");
    }
  }
  EXPECT_EQ(heard, (std::vector<std::string>{"0 endpoint already registered", "1 "}));
}

// GetInfo: what the registration socket at `registrar` tells the kubelet.
absl::StatusOr<pluginregistration::PluginInfo> GetInfo(const std::filesystem::path& registrar) {
  auto stub = pluginregistration::Registration::NewStub(
      grpc::CreateChannel(UnixTarget(registrar), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  pluginregistration::PluginInfo info;
  const grpc::Status answered = stub->GetInfo(&context, {}, &info);
  if (!answered.ok()) return absl::UnavailableError(answered.error_message());
  return info;
}

// Unprepared: a NodeUnprepareResources of no claims made on `socket` is answered.
absl::Status Unprepared(const std::filesystem::path& socket) {
  const dra::DriverClient client("gpu.example.com", socket.string(), dra::kDraPluginServiceV1,
                                 absl::Seconds(10));
  return client.NodeUnprepareResources({}).status();
}

// Upstream's TestEndpointListener: a listener of the driver's is asked for the service socket's
// path and its socket is served; the helper makes no file at that path, and at Stop closes the
// listener's socket without removing the file the driver made.
TEST(HelperTest, TestEndpointListener) {
  TempDir dir;
  IdleDriver driver;
  HelperOptions options = Options(dir.path());
  std::vector<std::filesystem::path> asked;
  const std::filesystem::path elsewhere = dir.Sub("elsewhere.sock");
  options.service_listener = [&](const std::filesystem::path& path) -> absl::StatusOr<int> {
    asked.push_back(path);
    ListeningSocket socket(elsewhere);
    if (!socket.listening()) return absl::InternalError("cannot listen");
    return socket.Release();
  };
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  ASSERT_TRUE(helper.ok()) << helper.status();
  const std::filesystem::path service = dir.Sub("plugins") / "gpu.example.com" / "dra.sock";
  EXPECT_THAT(asked, ::testing::ElementsAre(service));
  EXPECT_FALSE(std::filesystem::exists(service));
  absl::StatusOr<pluginregistration::PluginInfo> info = GetInfo((*helper)->registrar_socket());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->endpoint(), service.string()) << "the kubelet is told the path all the same";
  const absl::Status answered = Unprepared(elsewhere);
  EXPECT_TRUE(answered.ok()) << answered;

  (*helper)->Stop();
  EXPECT_TRUE(IsSocket(elsewhere));
  EXPECT_EQ(ConnectError(elsewhere), ECONNREFUSED) << "the listener's socket is closed";
}

// A listener that cannot listen fails Start with its error, named as upstream's.
TEST(HelperTest, AListenerThatFailsFailsStart) {
  TempDir dir;
  IdleDriver driver;
  for (const bool registrar : {false, true}) {
    HelperOptions options = Options(dir.path());
    (registrar ? options.registrar_listener : options.service_listener) =
        [](const std::filesystem::path&) -> absl::StatusOr<int> {
      return absl::PermissionDeniedError("no sockets today");
    };
    absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
    ASSERT_FALSE(helper.ok());
    EXPECT_EQ(helper.status().code(), absl::StatusCode::kPermissionDenied);
    const std::filesystem::path path =
        registrar ? dir.Sub("plugins_registry") / "gpu.example.com-reg.sock"
                  : dir.Sub("plugins") / "gpu.example.com" / "dra.sock";
    EXPECT_EQ(helper.status().message(),
              absl::StrCat(registrar ? "start registrar" : "start DRA service", ": listen on \"",
                           path.string(), "\": no sockets today"));
    EXPECT_FALSE(std::filesystem::exists(dir.Sub("plugins_registry") / "gpu.example.com-reg.sock"))
        << "nothing stays registered";
  }
}

// A listener's socket that does not listen for connections fails Start, saying so; the helper
// closes it.
TEST(HelperTest, AListenersSocketThatDoesNotListenFailsStart) {
  TempDir dir;
  IdleDriver driver;
  HelperOptions options = Options(dir.path());
  int given = -1;
  ino_t inode = 0;
  options.service_listener = [&](const std::filesystem::path&) -> absl::StatusOr<int> {
    given = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct stat made {};
    if (given >= 0 && ::fstat(given, &made) == 0) inode = made.st_ino;
    return given;
  };
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  ASSERT_FALSE(helper.ok());
  EXPECT_EQ(helper.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(helper.status().message(),
            "start DRA service: DRA gRPC server: the socket does not listen for connections");
  ASSERT_GE(given, 0);
  ASSERT_NE(inode, 0u);
  // Closed: the number is free, or another thread's file has it since.
  struct stat now {};
  EXPECT_TRUE(::fstat(given, &now) != 0 || now.st_ino != inode) << "the socket is still open";
}

// Upstream's node e2e "must report gRPC serving error", for the registrar and for the DRA
// service: a listener's socket that fails (shut down here, where upstream's listener returns an
// error from Accept) is told to the driver, with what stopped, as upstream's HandleError. A
// socket shut down for reading only counts too (it never polls as hung up: before, the accept
// loop spun on it).
TEST(HelperTest, MustReportGRPCServingError) {
  for (const auto& [registrar, how] :
       {std::pair{true, SHUT_RDWR}, std::pair{false, SHUT_RDWR}, std::pair{true, SHUT_RD}}) {
    SCOPED_TRACE(absl::StrCat(registrar ? "registrar" : "service",
                              how == SHUT_RD ? ", SHUT_RD" : ", SHUT_RDWR"));
    TempDir dir;
    IdleDriver driver;
    HelperOptions options = Options(dir.path());
    std::atomic<int> listening{-1};
    (registrar ? options.registrar_listener : options.service_listener) =
        [&](const std::filesystem::path& path) -> absl::StatusOr<int> {
      ListeningSocket socket(path);
      if (!socket.listening()) return absl::InternalError("cannot listen");
      listening = socket.Release();
      return listening.load();
    };
    absl::Mutex mu;
    std::vector<std::string> told;
    options.handle_serving_error = [&](const std::string& what, const absl::Status& error) {
      absl::MutexLock lock(&mu);
      told.push_back(absl::StrCat(what, ": ", error.message()));
    };
    absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
    ASSERT_TRUE(helper.ok()) << helper.status();
    ASSERT_EQ(::shutdown(listening.load(), how), 0);
    ASSERT_TRUE(WaitFor([&] {
      absl::MutexLock lock(&mu);
      return !told.empty();
    }));
    (*helper)->Stop();
    absl::MutexLock lock(&mu);
    EXPECT_THAT(told, ::testing::ElementsAre(absl::StrCat(
                          registrar ? "registrar" : "DRA",
                          " gRPC server failed: ", "accept: the listening socket was shut down")));
  }
}

// Upstream's RegistrationService(false) and DRAService(false), as its node e2e runs a driver
// whose registration and service are two processes: the registrar alone makes no service
// socket and tells the kubelet the service's path; the service alone makes no registration
// socket and answers at that path. The service socket may take a name of its own (upstream's
// PluginSocket).
TEST(HelperTest, TheRegistrarAndTheServiceRunAlone) {
  TempDir dir;
  IdleDriver driver;
  HelperOptions registrar_only = Options(dir.path());
  registrar_only.serve_service = false;
  registrar_only.plugin_socket = "gpu.example.com-common.sock";
  absl::StatusOr<std::unique_ptr<Helper>> registrar =
      Helper::Start(driver, std::move(registrar_only));
  ASSERT_TRUE(registrar.ok()) << registrar.status();
  const std::filesystem::path service =
      dir.Sub("plugins") / "gpu.example.com" / "gpu.example.com-common.sock";
  EXPECT_EQ((*registrar)->service_socket(), service);
  EXPECT_FALSE(std::filesystem::exists(service));
  absl::StatusOr<pluginregistration::PluginInfo> info = GetInfo((*registrar)->registrar_socket());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->endpoint(), service.string());
  EXPECT_EQ(info->supported_versions_size(), 2);

  HelperOptions service_only = Options(dir.path());
  service_only.serve_registration = false;
  service_only.plugin_socket = "gpu.example.com-common.sock";
  service_only.registrar_socket_file = "unused-reg.sock";
  absl::StatusOr<std::unique_ptr<Helper>> served = Helper::Start(driver, std::move(service_only));
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("plugins_registry") / "unused-reg.sock"));
  const absl::Status answered = Unprepared(service);
  EXPECT_TRUE(answered.ok()) << answered;
  (*served)->Stop();
  EXPECT_FALSE(std::filesystem::exists(service));
  EXPECT_TRUE(IsSocket((*registrar)->registrar_socket()));
}

// A service socket's name that is not a file name is refused.
TEST(HelperTest, AServiceSocketNameThatIsNoFileNameIsRefused) {
  TempDir dir;
  IdleDriver driver;
  for (const std::string name : {"..", "a/b"}) {
    HelperOptions options = Options(dir.path());
    options.plugin_socket = name;
    absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
    ASSERT_FALSE(helper.ok()) << name;
    EXPECT_EQ(helper.status().message(),
              absl::StrCat("the service socket's name must be a file name, not ", name));
  }
}

}  // namespace
}  // namespace devmgr::kubeletplugin
