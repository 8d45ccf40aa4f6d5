// Dynamic Resource Allocation in the assembled node (node.h), in process, with a fake DRA driver
// on a unix socket: claims that come with a pod are stored, prepared before admission ends and
// their CDI devices join the run options and PodResources; a refused pod leaves no trace in any
// of the node's files; removal unprepares (a shared claim only with its last pod); and a
// restart prepares every claim of a running pod again once its driver is back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/file_store.h"
#include "common/logging.h"
#include "dra/checkpoint.h"
#include "nlohmann/json.hpp"
#include "node/claim_record.h"
#include "node/node.h"
#include "node/pod_manifest.h"
#include "node/pod_record.h"
#include "podresources/client.h"
#include "podresources/v1/api.grpc.pb.h"
#include "tests/dra/fake_driver.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::node {
namespace {

using ::devmgr::testing::FakeDriver;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;
namespace draapi = ::k8s::io::kubelet::pkg::apis::dra;

constexpr char kDriver[] = "gpu.example.com";

// A pod whose container "app" uses claim `claim` (brought in the same stream unless `bring` is
// false), allocated device dev-0 of kDriver.
std::string Manifest(const std::string& pod_uid, const std::string& claim, bool bring = true) {
  std::string text =
      absl::StrCat("metadata: {name: pod-", pod_uid, ", uid: ", pod_uid, "}\n",
                   "spec:\n  resourceClaims: [{name: gpu, resourceClaimName: ", claim, "}]\n",
                   "  containers: [{name: app, resources: {claims: [{name: gpu}]}}]\n");
  if (bring) {
    absl::StrAppend(&text, "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n",
                    "metadata: {name: ", claim, ", uid: uid-", claim, "}\n",
                    "status: {allocation: {devices: {results: [{request: gpu, driver: ", kDriver,
                    ", pool: node, device: dev-0}]}}}\n");
  }
  return text;
}

// Pod p1 whose sidecar "proxy" uses claim gpu-a, which the manifest brings, and whose app
// container uses none; `app_resources` is the app container's resources.
std::string SidecarManifest(absl::string_view app_resources = "{}") {
  return absl::StrCat(
      "metadata: {name: pod-p1, uid: p1}\n",
      "spec:\n  resourceClaims: [{name: gpu, resourceClaimName: gpu-a}]\n",
      "  initContainers: [{name: proxy, restartPolicy: Always, resources: {claims: [{name: "
      "gpu}]}}]\n",
      "  containers: [{name: app, resources: ", app_resources, "}]\n",
      "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n",
      "metadata: {name: gpu-a, uid: uid-gpu-a}\n",
      "status: {allocation: {devices: {results: [{request: gpu, driver: ", kDriver,
      ", pool: node, device: dev-0}]}}}\n");
}

// Each claim gets device dev-0 with the CDI device "gpu.example.com/gpu=<claim name>".
FakeDriver::PrepareFn PrepareDev0() {
  return ::devmgr::testing::OneDeviceEach("node", "dev-0", "gpu", absl::StrCat(kDriver, "/gpu"));
}

// Each claim's prepare fails with `error`.
FakeDriver::PrepareFn PrepareFails(const std::string& error) {
  return [error](const draapi::v1::NodePrepareResourcesRequest& request) {
    draapi::v1::NodePrepareResourcesResponse response;
    for (const auto& claim : request.claims()) {
      (*response.mutable_claims())[claim.uid()].set_error(error);
    }
    return response;
  };
}

class NodeDraTest : public ::testing::Test {
 protected:
  void SetUp() override {
    driver_ = std::make_unique<FakeDriver>(DriverSocket());
    ASSERT_TRUE(driver_->started());
    driver_->OnPrepare(PrepareDev0());
    StartNode();
  }

  std::string DriverSocket() const { return dir_.Sub("dra.sock").string(); }

  void StartNode(LoggerPtr logger = nullptr) {
    node_.reset();
    NodeOptions options;
    options.logger = std::move(logger);
    options.root_dir = dir_.Sub("root");
    options.dra_sync_period = absl::Milliseconds(20);
    options.dra_features = features_;
    absl::StatusOr<std::unique_ptr<Node>> node = Node::Start(options);
    ASSERT_TRUE(node.ok()) << node.status();
    node_ = *std::move(node);
  }

  void RegisterDriver() {
    ASSERT_TRUE(node_->dra_manager()
                    ->drivers()
                    .RegisterPlugin(kDriver, DriverSocket(), {"v1.DRAPlugin"})
                    .ok());
  }

  absl::StatusOr<std::vector<ContainerOptions>> Admit(const std::string& text) {
    absl::StatusOr<PodManifest> manifest = ParsePodManifest(text);
    if (!manifest.ok()) return manifest.status();
    return node_->admission().Admit(manifest->pod, manifest->claims);
  }

  // ListPodResources: the node's PodResources v1 List.
  void ListPodResources(::v1::ListPodResourcesResponse& response) {
    podresources::ClientOptions client;
    client.socket_path = node_->paths().podresources_socket;
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = podresources::Dial(client);
    ASSERT_TRUE(channel.ok()) << channel.status();
    auto stub = ::v1::PodResourcesLister::NewStub(*channel);
    grpc::ClientContext context;
    ASSERT_TRUE(stub->List(&context, ::v1::ListPodResourcesRequest(), &response).ok());
  }

  // The one DynamicResource PodResources lists for the first container of the node's one pod
  // (a failure, and an empty message, when there is not exactly one of each).
  ::v1::DynamicResource OnlyDynamicResource() {
    ::v1::ListPodResourcesResponse response;
    ListPodResources(response);
    EXPECT_EQ(response.pod_resources_size(), 1);
    if (response.pod_resources_size() != 1) return {};
    const ::v1::ContainerResources& container = response.pod_resources(0).containers(0);
    EXPECT_EQ(container.dynamic_resources_size(), 1);
    if (container.dynamic_resources_size() != 1) return {};
    return container.dynamic_resources(0);
  }

  // The claims dra_manager_state holds, by name.
  std::vector<std::string> CheckpointedClaims() const {
    absl::StatusOr<std::string> bytes = FileStore(dir_.Sub("root")).Read(dra::kCheckpointName);
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    absl::StatusOr<dra::CheckpointData> data = dra::Decode(bytes.value_or(""));
    EXPECT_TRUE(data.ok()) << data.status();
    std::vector<std::string> names;
    if (!data.ok()) return names;
    for (const dra::ClaimInfoState& state :
         data->entries.value_or(std::vector<dra::ClaimInfoState>{})) {
      names.push_back(state.claim_name);
    }
    return names;
  }

  // StartHealthDriver starts a driver that serves DRAResourceHealth on its own socket,
  // registers it, admits pod p1 with claim gpu-a and waits for the health stream; then the
  // driver reports dev-0 unhealthy with `message`. The pod's parsed manifest goes to `manifest`.
  void StartHealthDriver(const std::string& message, PodManifest& manifest) {
    FakeDriver::Options with_health;
    with_health.serve_health_v1 = true;
    health_socket_ = dir_.Sub("health.sock").string();
    health_driver_ = std::make_unique<FakeDriver>(health_socket_, with_health);
    ASSERT_TRUE(health_driver_->started());
    health_driver_->OnPrepare(PrepareDev0());
    ASSERT_TRUE(
        node_->dra_manager()
            ->drivers()
            .RegisterPlugin(kDriver, health_socket_, {"v1.DRAPlugin", "v1.DRAResourceHealth"})
            .ok());
    absl::StatusOr<PodManifest> parsed = ParsePodManifest(Manifest("p1", "gpu-a"));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    manifest = *std::move(parsed);
    ASSERT_TRUE(node_->admission().Admit(manifest.pod, manifest.claims).ok());
    ASSERT_TRUE(WaitFor([&] { return health_driver_->open_health_streams() == 1; }));
    ::v1::NodeWatchResourcesResponse report;
    ::v1::DeviceHealth* device = report.add_devices();
    device->mutable_device()->set_pool_name("node");
    device->mutable_device()->set_device_name("dev-0");
    device->set_health(::v1::UNHEALTHY);
    device->set_message(message);
    health_driver_->PushHealth(report);
  }

  TempDir dir_;
  structured::Features features_;  // the node's --feature-gates
  std::unique_ptr<FakeDriver> driver_;
  std::string health_socket_;
  std::unique_ptr<FakeDriver> health_driver_;
  std::unique_ptr<Node> node_;
};

TEST_F(NodeDraTest, AdmissionPreparesTheClaimsAndAddsTheirCdiDevices) {
  RegisterDriver();
  absl::StatusOr<std::vector<ContainerOptions>> admitted = Admit(Manifest("p1", "gpu-a"));
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  ASSERT_EQ(admitted->size(), 1U);
  EXPECT_EQ((*admitted)[0].options.cdi_devices,
            std::vector<std::string>{"gpu.example.com/gpu=gpu-a"});
  EXPECT_EQ(driver_->prepare_calls(), 1);
  EXPECT_EQ(CheckpointedClaims(), std::vector<std::string>{"gpu-a"});

  // The run options asked again carry them too, and the claim is listed as prepared.
  absl::StatusOr<devicemanager::RunContainerOptions> options =
      node_->admission().RunOptions("p1", "app");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->cdi_devices, std::vector<std::string>{"gpu.example.com/gpu=gpu-a"});
  std::vector<dra::ClaimSnapshot> claims = node_->dra_manager()->Claims();
  ASSERT_EQ(claims.size(), 1U);
  EXPECT_TRUE(claims[0].prepared);
  EXPECT_EQ(claims[0].state.pod_uids, (std::set<std::string>{"p1"}));
}

TEST_F(NodeDraTest, PodResourcesListsTheDynamicResources) {
  RegisterDriver();
  ASSERT_TRUE(Admit(Manifest("p1", "gpu-a")).ok());
  const ::v1::DynamicResource resource = OnlyDynamicResource();
  EXPECT_EQ(resource.claim_name(), "gpu-a");
  EXPECT_EQ(resource.claim_namespace(), "default");
  ASSERT_EQ(resource.claim_resources_size(), 1);
  EXPECT_EQ(resource.claim_resources(0).driver_name(), kDriver);
  EXPECT_EQ(resource.claim_resources(0).pool_name(), "node");
  EXPECT_EQ(resource.claim_resources(0).device_name(), "dev-0");
  EXPECT_FALSE(resource.claim_resources(0).has_share_id());
  ASSERT_EQ(resource.claim_resources(0).cdi_devices_size(), 1);
  EXPECT_EQ(resource.claim_resources(0).cdi_devices(0).name(), "gpu.example.com/gpu=gpu-a");
}

// A claim of two devices, each request named by the container once: PodResources lists the
// claim once, and each device with its own CDI IDs. The kubelet (1.35) lists the claim once per
// reference (twice here, the same entry) and gives each device the CDI IDs of the driver's
// devices before it too; README.md says why devmgr does not.
TEST_F(NodeDraTest, PodResourcesListsAClaimOnceAndEachDeviceWithItsOwnCdiIds) {
  driver_->OnPrepare([](const draapi::v1::NodePrepareResourcesRequest& prepare) {
    draapi::v1::NodePrepareResourcesResponse response;
    for (const auto& claim : prepare.claims()) {
      for (const std::string device : {"dev-0", "dev-1"}) {
        auto* answer = (*response.mutable_claims())[claim.uid()].add_devices();
        answer->set_pool_name("node");
        answer->set_device_name(device);
        answer->add_request_names(device == "dev-0" ? "gpu" : "nic");
        answer->add_cdi_device_ids(absl::StrCat(kDriver, "/gpu=", device));
      }
    }
    return response;
  });
  RegisterDriver();
  const std::string manifest = absl::StrCat(
      "metadata: {name: pod-p1, uid: p1}\n",
      "spec:\n  resourceClaims: [{name: both, resourceClaimName: gpu-a}]\n",
      "  containers: [{name: app, resources: {claims: [{name: both, request: gpu}, {name: both, "
      "request: nic}]}}]\n",
      "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n",
      "metadata: {name: gpu-a, uid: uid-gpu-a}\n",
      "status: {allocation: {devices: {results: [{request: gpu, driver: ", kDriver,
      ", pool: node, device: dev-0}, {request: nic, driver: ", kDriver,
      ", pool: node, device: dev-1}]}}}\n");
  ASSERT_TRUE(Admit(manifest).ok());
  const ::v1::DynamicResource resource = OnlyDynamicResource();
  EXPECT_EQ(resource.claim_name(), "gpu-a");
  ASSERT_EQ(resource.claim_resources_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const ::v1::ClaimResource& device = resource.claim_resources(i);
    ASSERT_EQ(device.cdi_devices_size(), 1) << device.device_name();
    EXPECT_EQ(device.cdi_devices(0).name(), absl::StrCat(kDriver, "/gpu=", device.device_name()));
  }
}

TEST_F(NodeDraTest, AMissingDriverRefusesThePodWithoutATrace) {
  absl::StatusOr<std::vector<ContainerOptions>> admitted = Admit(Manifest("p1", "gpu-a"));
  ASSERT_FALSE(admitted.ok());
  EXPECT_EQ(admitted.status().message(),
            "prepare dynamic resources: DRA driver gpu.example.com is not registered");
  EXPECT_FALSE(node_->admission().RunOptions("p1", "app").ok());
  EXPECT_TRUE(CheckpointedClaims().empty());
  absl::StatusOr<std::string> record = FileStore(dir_.Sub("root")).Read(kClaimRecordName);
  ASSERT_TRUE(record.ok());
  EXPECT_TRUE(DecodeClaimRecord(*record)->pods.empty());
  EXPECT_EQ(driver_->prepare_calls(), 0);
}

// DRAOptionalNodeOperations: a claim whose devices come from a driver run from the control
// plane, whose ResourceSlice skips every node operation, is admitted and removed with no node
// plugin of that driver; without the gate the pod is refused without a trace.
TEST_F(NodeDraTest, AClaimThatSkipsNodeOperationsNeedsNoNodePluginWithTheGate) {
  const std::string manifest =
      "metadata: {name: pod-p1, uid: p1}\n"
      "spec:\n  resourceClaims: [{name: net, resourceClaimName: vnet}]\n"
      "  containers: [{name: app, resources: {claims: [{name: net}]}}]\n"
      "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
      "metadata: {name: vnet, uid: uid-vnet}\n"
      "status: {allocation: {devices: {results: [{request: net, driver: control-plane.example.com, "
      "pool: central, device: vnet-0, skipNodeOperations: ['*']}]}}}\n";
  absl::StatusOr<std::vector<ContainerOptions>> refused = Admit(manifest);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "prepare dynamic resources: ResourceClaim vnet: DRAOptionalNodeOperations feature "
            "gate is disabled on kubelet");
  EXPECT_TRUE(CheckpointedClaims().empty());

  features_.optional_node_operations = true;
  StartNode();
  absl::StatusOr<std::vector<ContainerOptions>> admitted = Admit(manifest);
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  EXPECT_TRUE((*admitted)[0].options.cdi_devices.empty());
  EXPECT_EQ(CheckpointedClaims(), std::vector<std::string>{"vnet"});
  StartNode();  // what the driver skips comes back from dra_manager_state
  ASSERT_TRUE(node_->admission().Remove("p1").ok());
  EXPECT_TRUE(CheckpointedClaims().empty());
  EXPECT_EQ(driver_->prepare_calls(), 0);
}

TEST_F(NodeDraTest, ADriverErrorRefusesThePodAndUnpreparesWhatWasRecorded) {
  RegisterDriver();
  driver_->OnPrepare(PrepareFails("no such GPU"));
  absl::StatusOr<std::vector<ContainerOptions>> admitted = Admit(Manifest("p1", "gpu-a"));
  ASSERT_FALSE(admitted.ok());
  EXPECT_EQ(admitted.status().message(),
            "prepare dynamic resources: NodePrepareResources failed for ResourceClaim gpu-a: "
            "no such GPU");
  EXPECT_EQ(driver_->unprepare_calls(), 1);
  EXPECT_TRUE(CheckpointedClaims().empty());
  EXPECT_TRUE(node_->dra_manager()->Claims().empty());
}

TEST_F(NodeDraTest, ASharedClaimIsPreparedOnceAndUnpreparedWithItsLastPod) {
  RegisterDriver();
  ASSERT_TRUE(Admit(Manifest("p1", "shared")).ok());
  ASSERT_TRUE(Admit(Manifest("p2", "shared", /*bring=*/false)).ok());
  EXPECT_EQ(driver_->prepare_calls(), 1);

  ASSERT_TRUE(node_->admission().Remove("p1").ok());
  EXPECT_EQ(driver_->unprepare_calls(), 0);
  EXPECT_EQ(CheckpointedClaims(), std::vector<std::string>{"shared"});
  ASSERT_TRUE(node_->admission().Remove("p2").ok());
  EXPECT_EQ(driver_->unprepare_calls(), 1);
  EXPECT_TRUE(CheckpointedClaims().empty());
}

TEST_F(NodeDraTest, RemovalWaitsForTheDriverAndKeepsThePodUntilThen) {
  RegisterDriver();
  ASSERT_TRUE(Admit(Manifest("p1", "gpu-a")).ok());
  node_->dra_manager()->drivers().DeRegisterPlugin(kDriver, DriverSocket());
  absl::Status removed = node_->admission().Remove("p1");
  EXPECT_EQ(removed.message(),
            "unprepare dynamic resources: DRA driver gpu.example.com is not registered");
  EXPECT_TRUE(node_->admission().RunOptions("p1", "app").ok()) << "the pod stays";
  RegisterDriver();
  EXPECT_TRUE(node_->admission().Remove("p1").ok());
  EXPECT_EQ(driver_->unprepare_calls(), 1);
}

// A removal that fails after its claims were unprepared (here the pod record cannot be
// replaced: a folder where it goes) leaves the pod admitted: its claims are prepared again, so
// that its containers' options stay whole until it is removed for good.
TEST_F(NodeDraTest, AFailedRemovalPreparesThePodsClaimsAgain) {
  RegisterDriver();
  ASSERT_TRUE(Admit(Manifest("p1", "gpu-a")).ok());
  const std::filesystem::path record = dir_.Sub("root") / "device-plugins" / kPodRecordName;
  std::filesystem::remove(record);
  std::filesystem::create_directory(record);
  EXPECT_FALSE(node_->admission().Remove("p1").ok());
  EXPECT_EQ(driver_->unprepare_calls(), 1);
  ASSERT_TRUE(WaitFor([&] { return driver_->prepare_calls() == 2; })) << "prepared again";
  absl::StatusOr<devicemanager::RunContainerOptions> options =
      node_->admission().RunOptions("p1", "app");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->cdi_devices, std::vector<std::string>{"gpu.example.com/gpu=gpu-a"});

  std::filesystem::remove(record);
  ASSERT_TRUE(node_->admission().Remove("p1").ok());
  EXPECT_EQ(driver_->unprepare_calls(), 2);
}

// A refused pod whose claims the driver could not unprepare stays named in the DRA manager's
// state until the sync unprepares them. The same UID admitted meanwhile without claims is
// refused as not ready yet, rather than admitted and then taken for a pod whose claims a
// damaged claim record took (its run options would fail from then on).
TEST_F(NodeDraTest, APodAdmittedWithoutClaimsWaitsForItsEarlierClaimsUnprepare) {
  RegisterDriver();
  driver_->OnPrepare(PrepareFails("no such GPU"));
  std::atomic<bool> busy = true;
  driver_->OnUnprepare([&busy](const draapi::v1::NodeUnprepareResourcesRequest& request) {
    draapi::v1::NodeUnprepareResourcesResponse response;
    auto& result = (*response.mutable_claims())[request.claims(0).uid()];
    if (busy) result.set_error("device busy");
    return response;
  });
  ASSERT_FALSE(Admit(Manifest("p1", "gpu-a")).ok());
  ASSERT_EQ(CheckpointedClaims(), std::vector<std::string>{"gpu-a"});
  const std::string without_claims =
      "metadata: {name: pod-p1, uid: p1}\nspec:\n  containers: [{name: app}]\n";
  absl::StatusOr<std::vector<ContainerOptions>> admitted = Admit(without_claims);
  EXPECT_EQ(admitted.status().code(), absl::StatusCode::kUnavailable) << admitted.status();
  EXPECT_FALSE(node_->admission().RunOptions("p1", "app").ok()) << "not admitted";

  busy = false;
  ASSERT_TRUE(WaitFor([&] { return CheckpointedClaims().empty(); }));
  admitted = Admit(without_claims);
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  EXPECT_TRUE(node_->admission().RunOptions("p1", "app").ok());
}

// The node's DRA pass lists the pods, then takes each pod's lock in turn, and a driver call may
// hold it up for its whole timeout: a pod removed and admitted again under its UID meanwhile,
// without its claims, is not prepared the claims it had. Before, the pass asked for the list's
// copy: the driver was spared only because the claim no longer named the pod among its users,
// and the pod was logged, and kept, as one whose claims could not be prepared.
TEST_F(NodeDraTest, TheDraPassPreparesAPodsClaimsAsTheyAreWhenItReachesThePod) {
  RegisterDriver();
  for (const auto& [pod, claim] : std::vector<std::pair<std::string, std::string>>{
           {"a", "gpu-a"}, {"p", "gpu-s"}, {"r", "gpu-s"}, {"z", "gpu-z"}}) {
    ASSERT_TRUE(Admit(Manifest(pod, claim)).ok()) << pod;
  }
  auto log = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
  StartNode(std::make_shared<spdlog::logger>("node", log));  // none is prepared since this start
  absl::Notification in_a;
  absl::Notification release_a;
  std::mutex mu;
  std::vector<std::string> prepared;
  driver_->OnPrepare([&](const draapi::v1::NodePrepareResourcesRequest& request) {
    const std::string claim = request.claims(0).name();
    {
      std::lock_guard<std::mutex> lock(mu);
      prepared.push_back(claim);
    }
    if (claim == "gpu-a" && !in_a.HasBeenNotified()) {
      in_a.Notify();
      release_a.WaitForNotification();
    }
    return PrepareDev0()(request);
  });
  RegisterDriver();
  ASSERT_TRUE(in_a.WaitForNotificationWithTimeout(absl::Seconds(20))) << "the pass reaches a";
  ASSERT_TRUE(node_->admission().Remove("p").ok());
  ASSERT_TRUE(Admit("metadata: {name: pod-p, uid: p}\nspec:\n  containers: [{name: app}]\n").ok());
  release_a.Notify();
  // z comes after p and r in the pass.
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return std::find(prepared.begin(), prepared.end(), "gpu-z") != prepared.end();
  }));
  driver_->OnPrepare(PrepareDev0());
  absl::StatusOr<std::string> bytes = FileStore(dir_.Sub("root")).Read(dra::kCheckpointName);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<dra::CheckpointData> data = dra::Decode(*bytes);
  ASSERT_TRUE(data.ok()) << data.status();
  std::optional<std::set<std::string>> users;
  for (const dra::ClaimInfoState& state :
       data->entries.value_or(std::vector<dra::ClaimInfoState>{})) {
    if (state.claim_name == "gpu-s") users = state.pod_uids;
  }
  EXPECT_EQ(users, (std::set<std::string>{"r"}));
  EXPECT_TRUE(node_->admission().RunOptions("p", "app").ok());
  // (Before the driver registered, every pod's claims were logged as not prepared yet.)
  for (const std::string& line : log->last_formatted()) {
    if (line.find("is not registered") != std::string::npos) continue;
    EXPECT_EQ(line.find("not prepared yet"), std::string::npos) << line;
  }
}

// A removal whose unprepare the driver refuses leaves the pod admitted with a claim the driver
// may have half undone: it is prepared again before its containers are handed it.
TEST_F(NodeDraTest, ARemovalTheDriverRefusesPreparesTheClaimAgain) {
  RegisterDriver();
  ASSERT_TRUE(Admit(Manifest("p1", "gpu-a")).ok());
  driver_->OnUnprepare([](const draapi::v1::NodeUnprepareResourcesRequest& request) {
    draapi::v1::NodeUnprepareResourcesResponse response;
    (*response.mutable_claims())[request.claims(0).uid()].set_error("device busy");
    return response;
  });
  EXPECT_FALSE(node_->admission().Remove("p1").ok());
  ASSERT_TRUE(WaitFor([&] { return driver_->prepare_calls() == 2; })) << "prepared again";
  absl::StatusOr<devicemanager::RunContainerOptions> options =
      node_->admission().RunOptions("p1", "app");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->cdi_devices, std::vector<std::string>{"gpu.example.com/gpu=gpu-a"});
}

TEST_F(NodeDraTest, ARestartPreparesEveryClaimAgainOnceTheDriverIsBack) {
  RegisterDriver();
  ASSERT_TRUE(Admit(Manifest("p1", "gpu-a")).ok());
  EXPECT_EQ(driver_->prepare_calls(), 1);
  StartNode();
  // Known from the checkpoint, but not prepared since the start.
  ASSERT_EQ(node_->dra_manager()->Claims().size(), 1U);
  EXPECT_FALSE(node_->dra_manager()->Claims()[0].prepared);
  // Its containers are not handed the claim's CDI devices until the driver prepared it again.
  absl::StatusOr<devicemanager::RunContainerOptions> early =
      node_->admission().RunOptions("p1", "app");
  EXPECT_EQ(early.status().message(),
            "prepare dynamic resources: DRA driver gpu.example.com is not registered");
  RegisterDriver();
  ASSERT_TRUE(WaitFor([&] { return driver_->prepare_calls() == 2; }));
  ASSERT_TRUE(WaitFor([&] { return node_->dra_manager()->Claims()[0].prepared; }));
  absl::StatusOr<devicemanager::RunContainerOptions> options =
      node_->admission().RunOptions("p1", "app");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->cdi_devices, std::vector<std::string>{"gpu.example.com/gpu=gpu-a"});
}

// A corrupt pod record: the pods that hold claims and no device are recovered from the claim
// record, as the pods that hold devices are from the checkpoint. Before, the restart forgot them
// with their claims, and the DRA manager's reconcile had the driver unprepare the claims of a
// pod that was still running.
TEST_F(NodeDraTest, APodThatHoldsOnlyClaimsOutlivesACorruptPodRecord) {
  RegisterDriver();
  ASSERT_TRUE(Admit(Manifest("p1", "gpu-a")).ok());
  const std::filesystem::path record = node_->paths().plugin_dir / kPodRecordName;
  node_.reset();
  ASSERT_TRUE(std::filesystem::exists(record));
  std::ofstream(record, std::ios::trunc) << "{not a record";
  StartNode();
  RegisterDriver();
  absl::StatusOr<devicemanager::RunContainerOptions> options =
      node_->admission().RunOptions("p1", "app");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->cdi_devices, std::vector<std::string>{"gpu.example.com/gpu=gpu-a"});
  EXPECT_TRUE(std::filesystem::exists(record.string() + ".corrupt"));

  // Listed under the name the claim record kept, with its claim.
  ::v1::ListPodResourcesResponse response;
  ASSERT_NO_FATAL_FAILURE(ListPodResources(response));
  ASSERT_EQ(response.pod_resources_size(), 1);
  EXPECT_EQ(response.pod_resources(0).name(), "pod-p1");
  ASSERT_EQ(response.pod_resources(0).containers_size(), 1);
  ASSERT_EQ(response.pod_resources(0).containers(0).dynamic_resources_size(), 1);
  EXPECT_EQ(response.pod_resources(0).containers(0).dynamic_resources(0).claim_name(), "gpu-a");

  // The start kept its claims, and nothing unprepared them.
  absl::StatusOr<std::string> claims = FileStore(dir_.Sub("root")).Read(kClaimRecordName);
  ASSERT_TRUE(claims.ok()) << claims.status();
  EXPECT_EQ(DecodeClaimRecord(*claims)->pods.size(), 1U);
  EXPECT_EQ(driver_->unprepare_calls(), 0);
  EXPECT_EQ(CheckpointedClaims(), std::vector<std::string>{"gpu-a"});

  // Written to the new record: the start after keeps it too, and its removal unprepares.
  StartNode();
  RegisterDriver();
  options = node_->admission().RunOptions("p1", "app");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(driver_->unprepare_calls(), 0);
  ASSERT_TRUE(node_->admission().Remove("p1").ok());
  EXPECT_EQ(driver_->unprepare_calls(), 1);
  EXPECT_TRUE(CheckpointedClaims().empty());
}

// A damaged claim record is kept aside, and with it which containers of an admitted pod use
// which claims. The pod's run options and its admission again say so, never the options without
// its CDI devices (before: a container started without its device, and the admission again was
// refused as "already admitted with other containers"). Removed, its claim is unprepared (the
// pod is no longer active) and the pod can be admitted again.
TEST_F(NodeDraTest, APodWhoseClaimsWentWithADamagedClaimRecordSaysSo) {
  RegisterDriver();
  ASSERT_TRUE(Admit(Manifest("p1", "gpu-a")).ok());
  node_.reset();
  std::ofstream(dir_.Sub("root") / kClaimRecordName, std::ios::trunc) << "{not a record";
  StartNode();
  RegisterDriver();
  absl::StatusOr<devicemanager::RunContainerOptions> options =
      node_->admission().RunOptions("p1", "app");
  EXPECT_EQ(options.status().code(), absl::StatusCode::kFailedPrecondition) << options.status();
  EXPECT_THAT(options.status().message(),
              ::testing::HasSubstr("that the DRA manager's state names and the claim record does "
                                   "not (a claim record found damaged is kept aside with a "
                                   "\".corrupt\" suffix)"));
  absl::StatusOr<std::vector<ContainerOptions>> again = Admit(Manifest("p1", "gpu-a"));
  EXPECT_EQ(again.status(), options.status());
  EXPECT_EQ(driver_->unprepare_calls(), 0);
  EXPECT_EQ(CheckpointedClaims(), std::vector<std::string>{"gpu-a"});

  ASSERT_TRUE(node_->admission().Remove("p1").ok());
  EXPECT_TRUE(WaitFor([&] { return CheckpointedClaims().empty(); }));
  EXPECT_EQ(driver_->unprepare_calls(), 1);
  again = Admit(Manifest("p1", "gpu-a"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)[0].options.cdi_devices, std::vector<std::string>{"gpu.example.com/gpu=gpu-a"});
}

// A sidecar (an init container with restartPolicy Always) that uses a claim is a sidecar again
// when its pod is admitted again from the claim record after a corrupt pod record, so
// PodResources lists it with its claim, as before the restart. Before, the claim record did not
// keep the restart policy: the sidecar came back as a plain init container, which PodResources
// does not list.
TEST_F(NodeDraTest, ASidecarThatUsesAClaimStaysASidecarAfterACorruptPodRecord) {
  RegisterDriver();
  const std::string manifest = SidecarManifest();
  ASSERT_TRUE(Admit(manifest).ok());
  const auto listed = [&]() {
    std::vector<std::string> containers;
    ::v1::ListPodResourcesResponse response;
    ListPodResources(response);
    for (const auto& pod : response.pod_resources()) {
      for (const auto& container : pod.containers()) {
        containers.push_back(
            absl::StrCat(container.name(), ":", container.dynamic_resources_size()));
      }
    }
    return containers;
  };
  const std::vector<std::string> before = listed();
  EXPECT_EQ(before, (std::vector<std::string>{"proxy:1", "app:0"}));

  const std::filesystem::path record = node_->paths().plugin_dir / kPodRecordName;
  node_.reset();
  std::ofstream(record, std::ios::trunc) << "{not a record";
  StartNode();
  RegisterDriver();
  EXPECT_EQ(listed(), before);
}

// A pod admitted by a devmgr that did not keep restart policies, or the resources each container
// requests, in the claim record gets them back from the pod record at the next start, and its
// entry is written again with them: a later start that reads it (after a corrupt pod record)
// knows its sidecar, and the pod admitted again with them is the same pod, not refused as one
// "already admitted with other containers".
TEST_F(NodeDraTest, AnAdmittedSidecarRecordedWithoutItsPolicyIsTheSamePodAgain) {
  RegisterDriver();
  const std::string manifest = SidecarManifest("{limits: {example.com/other: 1}}");
  ASSERT_TRUE(Admit(manifest).ok());
  node_.reset();
  const FileStore root(dir_.Sub("root"));
  absl::StatusOr<std::string> record = root.Read(kClaimRecordName);
  ASSERT_TRUE(record.ok()) << record.status();
  ASSERT_NE(record->find("\"restartPolicy\":\"Always\""), std::string::npos) << *record;
  ASSERT_NE(record->find("\"requestedResources\":[\"example.com/other\"]"), std::string::npos)
      << *record;
  nlohmann::json older = nlohmann::json::parse(*record);
  for (auto& pod : older["pods"]) {
    for (auto& container : pod["initContainers"]) container.erase("restartPolicy");
    for (auto& container : pod["containers"]) container.erase("requestedResources");
  }
  ASSERT_TRUE(root.Write(kClaimRecordName, older.dump()).ok());
  StartNode();
  absl::StatusOr<std::string> rewritten = root.Read(kClaimRecordName);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_EQ(*rewritten, *record);
  RegisterDriver();
  absl::StatusOr<std::vector<ContainerOptions>> again = Admit(manifest);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(driver_->unprepare_calls(), 0);
}

TEST_F(NodeDraTest, AdmittingTheSamePodAgainAnswersItsOptionsAndOtherClaimsAreRefused) {
  RegisterDriver();
  ASSERT_TRUE(Admit(Manifest("p1", "gpu-a")).ok());
  absl::StatusOr<std::vector<ContainerOptions>> again = Admit(Manifest("p1", "gpu-a"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)[0].options.cdi_devices, std::vector<std::string>{"gpu.example.com/gpu=gpu-a"});
  EXPECT_EQ(driver_->prepare_calls(), 1);
  EXPECT_EQ(Admit(Manifest("p1", "gpu-b")).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(NodeDraTest, ANodeWithoutDraRefusesPodsWithClaims) {
  node_.reset();
  NodeOptions options;
  options.root_dir = dir_.Sub("root");
  options.dra = false;
  absl::StatusOr<std::unique_ptr<Node>> node = Node::Start(options);
  ASSERT_TRUE(node.ok()) << node.status();
  node_ = *std::move(node);
  EXPECT_EQ(node_->dra_manager(), nullptr);
  absl::StatusOr<std::vector<ContainerOptions>> admitted = Admit(Manifest("p1", "gpu-a"));
  EXPECT_EQ(admitted.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(admitted.status().message(),
            "pod p1 uses ResourceClaims, and this node serves no DRA drivers");
}

// KEP-4680 for DRA: a driver that serves DRAResourceHealth gets a health stream; a device it
// reports unhealthy shows in the container's allocatedResourcesStatus entry "claim:<pod claim>"
// (what `devmgr pods list` shows), and the stream's end makes it Unknown.
TEST_F(NodeDraTest, ADriversHealthReportReachesTheClaimsStatus) {
  PodManifest manifest;
  ASSERT_NO_FATAL_FAILURE(StartHealthDriver("ECC errors", manifest));
  const dra::Pod& pod = manifest.claims.pod;
  auto statuses = [&] {
    return node_->dra_manager()->ContainerResourceStatuses(pod, pod.containers[0]);
  };
  ASSERT_TRUE(WaitFor([&] {
    const std::vector<dra::ResourceStatus> now = statuses();
    return !now.empty() && !now[0].resources.empty() &&
           now[0].resources[0].health == dra::ResourceHealthStatus::kUnhealthy;
  }));
  const std::vector<dra::ResourceStatus> unhealthy = statuses();
  ASSERT_EQ(unhealthy.size(), 1U);
  EXPECT_EQ(unhealthy[0].name, "claim:gpu");
  ASSERT_EQ(unhealthy[0].resources.size(), 1U);
  EXPECT_EQ(unhealthy[0].resources[0].resource_id, "gpu.example.com/gpu=gpu-a");
  EXPECT_EQ(unhealthy[0].resources[0].message, "ECC errors");

  // A second claim of the container whose name is not in the pod's status yet (a template's)
  // leaves the first one reported, as upstream skips only the claim it cannot resolve.
  dra::Pod with_pending = pod;
  with_pending.resource_claims.push_back({"pending", std::nullopt, "gpu-template"});
  with_pending.containers[0].claims.push_back({"pending", ""});
  const std::vector<dra::ResourceStatus> beside =
      node_->dra_manager()->ContainerResourceStatuses(with_pending, with_pending.containers[0]);
  ASSERT_EQ(beside.size(), 1U);
  EXPECT_EQ(beside[0].name, "claim:gpu");

  // The driver ends the stream: its devices are no longer known to be anything.
  health_driver_->EndHealthStreams(grpc::Status::OK);
  ASSERT_TRUE(WaitFor([&] {
    const std::vector<dra::ResourceStatus> now = statuses();
    return !now.empty() && !now[0].resources.empty() &&
           now[0].resources[0].health == dra::ResourceHealthStatus::kUnknown;
  }));
  node_->dra_manager()->drivers().DeRegisterPlugin(kDriver, health_socket_);
}

// The node's stop leaves the health its drivers reported in dra_health_state, as a kubelet's
// stop does: the node started again reads it back (until its timeout) before the driver is back.
TEST_F(NodeDraTest, TheHealthDriversReportedOutlivesTheNodesStop) {
  PodManifest manifest;
  ASSERT_NO_FATAL_FAILURE(StartHealthDriver("ECC errors", manifest));
  const dra::Pod& pod = manifest.claims.pod;
  const auto health = [&] {
    const std::vector<dra::ResourceStatus> now =
        node_->dra_manager()->ContainerResourceStatuses(pod, pod.containers[0]);
    return now.empty() || now[0].resources.empty() ? dra::ResourceHealthStatus::kUnknown
                                                   : now[0].resources[0].health;
  };
  ASSERT_TRUE(WaitFor([&] { return health() == dra::ResourceHealthStatus::kUnhealthy; }));

  StartNode();
  EXPECT_EQ(health(), dra::ResourceHealthStatus::kUnhealthy);
}

}  // namespace
}  // namespace devmgr::node
