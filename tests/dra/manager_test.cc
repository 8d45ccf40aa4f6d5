// dra::Manager against a fake DRA driver on a unix socket and an in-memory ClaimSource: the
// upstream tests of pkg/kubelet/cm/dra/manager_test.go ported by name (TestPrepareResources and
// its subtests, TestUnprepareResources, TestPodMightNeedToUnprepareResources, TestGetResources,
// TestGetContainerClaimInfos, TestParallelPrepareUnprepareResources), plus the checkpoint across
// a restart, a corrupt checkpoint, and Reconcile.
#include "dra/manager.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/damaged_copy.h"
#include "common/file_store.h"
#include "common/status.h"
#include "dra/claim_name.h"
#include "tests/dra/fake_driver.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::dra {
namespace {

using ::devmgr::testing::FakeDriver;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;

constexpr char kDriver[] = "test-driver.cdi.k8s.io";
constexpr char kNamespace[] = "test-namespace";
constexpr char kPodUid[] = "test-pod-uid";
constexpr char kClaimName[] = "test-claim";
constexpr char kClaimUid[] = "test-claim-uid";

class FakeClaimSource final : public ClaimSource {
 public:
  void Set(ResourceClaim claim) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    claims_[{claim.namespace_name, claim.name}] = std::move(claim);
  }
  // SetAnswer: `claim` is what a lookup of `namespace_name`/`name` returns, whatever it names.
  void SetAnswer(const std::string& namespace_name, const std::string& name, ResourceClaim claim)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    claims_[{namespace_name, name}] = std::move(claim);
  }
  void Remove(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    claims_.erase({kNamespace, name});
  }
  absl::StatusOr<ResourceClaim> GetClaim(const std::string& namespace_name,
                                         const std::string& name) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = claims_.find({namespace_name, name});
    if (it == claims_.end()) {
      return absl::NotFoundError(absl::StrCat("resourceclaims \"", name, "\" not found"));
    }
    return it->second;
  }

 private:
  absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, ResourceClaim> claims_ ABSL_GUARDED_BY(mu_);
};

// RecordingMetrics keeps what the manager reports, as upstream's tests read the metrics:
// "PrepareResources is_error=false", "test-driver.cdi.k8s.io /k8s...DRAPlugin/NodePrepareResources
// OK".
class RecordingMetrics final : public ManagerMetrics {
 public:
  void OperationDone(absl::string_view operation, bool failed, absl::Duration) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    operations_.push_back(absl::StrCat(operation, " is_error=", failed ? "true" : "false"));
  }
  void DriverCallDone(absl::string_view driver, absl::string_view method, absl::StatusCode code,
                      absl::Duration) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    calls_.push_back(absl::StrCat(driver, " ", method, " ", GoCodeName(code)));
  }
  std::vector<std::string> operations() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return operations_;
  }
  std::vector<std::string> calls() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> operations_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
};

// RecordingWriter writes what it is given, as the end of a host's chain of writers would, and
// keeps the names of each write's files in the order of their renames.
class RecordingWriter final : public DurableWriter {
 public:
  absl::Status WriteTogether(std::vector<FileStore::PlacedBytes> files) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    std::vector<std::string> names;
    for (const FileStore::PlacedBytes& file : files) names.emplace_back(file.name);
    {
      absl::MutexLock lock(&mu_);
      writes_.push_back(std::move(names));
    }
    return FileStore::WriteAcross(files);
  }
  std::vector<std::vector<std::string>> writes() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return writes_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::vector<std::string>> writes_ ABSL_GUARDED_BY(mu_);
};

constexpr char kPrepareCall[] =
    "test-driver.cdi.k8s.io /k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources";

ResourceClaim Claim(const std::string& name, const std::string& uid, const std::string& pod_uid,
                    const std::string& driver = kDriver) {
  ResourceClaim claim;
  claim.namespace_name = kNamespace;
  claim.name = name;
  claim.uid = uid;
  claim.allocation = std::vector<DeviceRequestAllocationResult>{
      {"test-request", driver, "test-pool", "test-device", std::nullopt}};
  claim.reserved_for.push_back({"", "pods", "test-pod", pod_uid});
  return claim;
}

Pod PodWithClaim(const std::string& uid, const std::string& claim_name,
                 std::vector<ContainerClaim> uses = {{"claim", ""}}) {
  Pod pod;
  pod.uid = uid;
  pod.namespace_name = kNamespace;
  pod.name = "test-pod";
  pod.resource_claims.push_back({"claim", claim_name, std::nullopt});
  pod.containers.push_back({"container", std::move(uses), {}});
  return pod;
}

// One device per claim with the CDI ID "<driver>/test=<claim name>".
FakeDriver::PrepareFn PrepareOneDeviceEach() {
  return ::devmgr::testing::OneDeviceEach("test-pool", "test-device", "test-request",
                                          absl::StrCat(kDriver, "/test"));
}

// FailUnprepare: a driver's answer of `error` for the first claim of every unprepare.
FakeDriver::UnprepareFn FailUnprepare(const std::string& error) {
  return [error](const draapi::v1::NodeUnprepareResourcesRequest& request) {
    draapi::v1::NodeUnprepareResourcesResponse response;
    (*response.mutable_claims())[request.claims(0).uid()].set_error(error);
    return response;
  };
}

class DraManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    driver_ = std::make_unique<FakeDriver>(Socket());
    ASSERT_TRUE(driver_->started());
    driver_->OnPrepare(PrepareOneDeviceEach());
    CreateManager();
  }

  std::string Socket() const { return dir_.Sub("dra.sock").string(); }

  void CreateManager(absl::Duration call_timeout = kDefaultCallTimeout,
                     bool extended_resource = false) {
    manager_.reset();
    ManagerOptions options;
    options.state_dir = dir_.path();
    options.claims = &claims_;
    options.extended_resource = extended_resource;
    options.optional_node_operations = optional_node_operations_;
    options.workload_resource_claims = workload_resource_claims_;
    options.call_timeout = call_timeout;
    options.metrics = &metrics_;
    options.writer = writer_;
    absl::StatusOr<std::unique_ptr<Manager>> manager = Manager::Create(std::move(options));
    ASSERT_TRUE(manager.ok()) << manager.status();
    manager_ = *std::move(manager);
    ASSERT_TRUE(manager_->drivers().RegisterPlugin(kDriver, Socket(), {"v1.DRAPlugin"}).ok());
  }

  CheckpointData Checkpoint() const {
    absl::StatusOr<std::string> bytes = FileStore(dir_.path()).Read(kCheckpointName);
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    absl::StatusOr<CheckpointData> data = Decode(bytes.ok() ? *bytes : "");
    EXPECT_TRUE(data.ok()) << data.status();
    return data.ok() ? *data : CheckpointData{};
  }

  // SharedClaimPods: the claim reserved for pod-1 and pod-2, and those two pods.
  std::pair<Pod, Pod> SharedClaimPods() {
    ResourceClaim claim = Claim(kClaimName, kClaimUid, "pod-1");
    claim.reserved_for.push_back({"", "pods", "pod-2", "pod-2"});
    claims_.Set(claim);
    return {PodWithClaim("pod-1", kClaimName), PodWithClaim("pod-2", kClaimName)};
  }

  size_t CheckpointedClaims() const {
    const CheckpointData data = Checkpoint();
    return data.entries.has_value() ? data.entries->size() : 0;
  }

  TempDir dir_;
  RecordingMetrics metrics_;
  DurableWriter* writer_ = nullptr;
  bool optional_node_operations_ = false;  // the DRAOptionalNodeOperations gate
  bool workload_resource_claims_ = false;  // the DRAWorkloadResourceClaims gate
  FakeClaimSource claims_;
  std::unique_ptr<FakeDriver> driver_;
  std::unique_ptr<Manager> manager_;
};

// Upstream's TestPrepareResources, one test per subtest.

TEST_F(DraManagerTest, TestPrepareResources_ClaimDoesntExist) {
  absl::Status prepared = manager_->PrepareResources(PodWithClaim(kPodUid, kClaimName));
  EXPECT_EQ(prepared.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(prepared.message(),
            "prepare dynamic resources: fetch ResourceClaim test-claim: "
            "resourceclaims \"test-claim\" not found");
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid)) << "nothing recorded";
  EXPECT_EQ(CheckpointedClaims(), 0u);
  EXPECT_EQ(metrics_.operations(), std::vector<std::string>{"PrepareResources is_error=true"});
  EXPECT_TRUE(metrics_.calls().empty());
}

TEST_F(DraManagerTest, TestPrepareResources_UnknownDriver) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid, "unknown-driver"));
  absl::Status prepared = manager_->PrepareResources(PodWithClaim(kPodUid, kClaimName));
  EXPECT_EQ(prepared.message(),
            "prepare dynamic resources: DRA driver unknown-driver is not registered");
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid));
  EXPECT_EQ(driver_->prepare_calls(), 0);
  EXPECT_EQ(metrics_.operations(), std::vector<std::string>{"PrepareResources is_error=true"});
}

TEST_F(DraManagerTest, TestPrepareResources_DriverReturnsNilValue) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  driver_->OnPrepare([](const draapi::v1::NodePrepareResourcesRequest& request) {
    draapi::v1::NodePrepareResourcesResponse response;
    (*response.mutable_claims())[request.claims(0).uid()];  // an empty answer is success
    return response;
  });
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_EQ(driver_->prepare_calls(), 1);
  EXPECT_TRUE(manager_->GetResources(pod, pod.containers[0])->empty());
  // No devices is no list, as upstream's checkpoint writes it.
  EXPECT_EQ(Checkpoint().entries->at(0).driver_state->at(kDriver).devices, std::nullopt);
  const std::string bytes = FileStore(dir_.path()).Read(kCheckpointName).value_or("");
  EXPECT_TRUE(absl::StrContains(bytes, R"(\"test-driver.cdi.k8s.io\":{\"Devices\":null})"))
      << bytes;
  EXPECT_EQ(metrics_.calls(), std::vector<std::string>{absl::StrCat(kPrepareCall, " OK")});
  EXPECT_EQ(metrics_.operations(), std::vector<std::string>{"PrepareResources is_error=false"});
}

TEST_F(DraManagerTest, TestPrepareResources_DriverReturnsEmptyResult) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  driver_->OnPrepare([](const draapi::v1::NodePrepareResourcesRequest&) {
    return draapi::v1::NodePrepareResourcesResponse();
  });
  EXPECT_EQ(manager_->PrepareResources(PodWithClaim(kPodUid, kClaimName)).message(),
            "prepare dynamic resources: NodePrepareResources skipped 1 ResourceClaims");
  EXPECT_EQ(metrics_.calls(), std::vector<std::string>{absl::StrCat(kPrepareCall, " OK")})
      << "the call itself succeeded";
  EXPECT_EQ(metrics_.operations(), std::vector<std::string>{"PrepareResources is_error=true"});
}

TEST_F(DraManagerTest, TestPrepareResources_PodIsNotAllowedToUseResourceClaim) {
  ResourceClaim claim = Claim(kClaimName, kClaimUid, kPodUid);
  claim.reserved_for.clear();
  claims_.Set(claim);
  EXPECT_EQ(manager_->PrepareResources(PodWithClaim(kPodUid, kClaimName)).message(),
            "prepare dynamic resources: pod test-pod (test-pod-uid) is not allowed to use "
            "ResourceClaim test-claim (test-claim-uid)");
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid));
}

TEST_F(DraManagerTest, TestPrepareResources_NotAllocated) {
  ResourceClaim claim = Claim(kClaimName, kClaimUid, kPodUid);
  claim.allocation.reset();
  claims_.Set(claim);
  const absl::Status prepared = manager_->PrepareResources(PodWithClaim(kPodUid, kClaimName));
  EXPECT_EQ(prepared.message(),
            "prepare dynamic resources: ResourceClaim test-claim: not allocated");
  EXPECT_EQ(prepared.code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(DraManagerTest, TestPrepareResources_NoContainerUsesTheClaim) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  const Pod pod = PodWithClaim(kPodUid, kClaimName, {});
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_EQ(driver_->prepare_calls(), 1) << "prepared for the pod all the same";
  EXPECT_TRUE(manager_->GetResources(pod, pod.containers[0])->empty());
}

TEST_F(DraManagerTest, TestPrepareResources_ResourceAlreadyPrepared) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_EQ(driver_->prepare_calls(), 1);
  EXPECT_EQ(metrics_.calls().size(), 1u);
  EXPECT_EQ(metrics_.operations(), (std::vector<std::string>{"PrepareResources is_error=false",
                                                             "PrepareResources is_error=false"}));
}

TEST_F(DraManagerTest, TestPrepareResources_ShouldTimeout) {
  CreateManager(absl::Milliseconds(20));
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  // Shared with the driver's handler, which may still run after the test body has returned.
  auto release = std::make_shared<absl::Notification>();
  driver_->OnPrepare([release](const draapi::v1::NodePrepareResourcesRequest& request) {
    release->WaitForNotification();
    return PrepareOneDeviceEach()(request);
  });
  absl::Status prepared = manager_->PrepareResources(PodWithClaim(kPodUid, kClaimName));
  release->Notify();
  EXPECT_EQ(prepared.code(), absl::StatusCode::kDeadlineExceeded) << prepared;
  // The call's error as grpc-go prints it, which upstream wraps.
  EXPECT_TRUE(absl::StartsWith(prepared.message(),
                               "prepare dynamic resources: NodePrepareResources: rpc error: code "
                               "= DeadlineExceeded desc = "))
      << prepared;
  EXPECT_TRUE(manager_->PodMightNeedToUnprepareResources(kPodUid))
      << "recorded before the call, so that Reconcile finds a deleted pod";
  EXPECT_EQ(metrics_.calls(),
            std::vector<std::string>{absl::StrCat(kPrepareCall, " DeadlineExceeded")});
  EXPECT_EQ(metrics_.operations(), std::vector<std::string>{"PrepareResources is_error=true"});
}

TEST_F(DraManagerTest, TestPrepareResources_ShouldPrepareResourceClaimNotInCache) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_EQ(*manager_->GetResources(pod, pod.containers[0]),
            std::vector<std::string>{"test-driver.cdi.k8s.io/test=test-claim"});
  const CheckpointData data = Checkpoint();
  ASSERT_EQ(data.entries->size(), 1u);
  const ClaimInfoState& state = (*data.entries)[0];
  EXPECT_EQ(state.claim_uid, kClaimUid);
  EXPECT_EQ(state.pod_uids, std::set<std::string>{kPodUid});
  const CheckpointDevice& device = state.driver_state->at(kDriver).devices->at(0);
  EXPECT_EQ(device.device_name, "test-device");
  EXPECT_EQ(device.request_names, GoStrings({"test-request"}));
}

TEST_F(DraManagerTest, TestPrepareResources_ClaimUidsMismatch) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  ASSERT_TRUE(manager_->PrepareResources(PodWithClaim(kPodUid, kClaimName)).ok());
  claims_.Set(Claim(kClaimName, "another-uid", "other-pod"));
  EXPECT_EQ(manager_->PrepareResources(PodWithClaim("other-pod", kClaimName)).message(),
            "prepare dynamic resources: old ResourceClaim with same name test-claim and "
            "different UID test-claim-uid still exists (previous pod force-deleted?!)");
}

TEST_F(DraManagerTest, TestPrepareResources_ShouldPrepareResourcesWithShareId) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  driver_->OnPrepare([](const draapi::v1::NodePrepareResourcesRequest& request) {
    draapi::v1::NodePrepareResourcesResponse response = PrepareOneDeviceEach()(request);
    (*response.mutable_claims())[request.claims(0).uid()].mutable_devices(0)->set_share_id(
        "share-1");
    return response;
  });
  ASSERT_TRUE(manager_->PrepareResources(PodWithClaim(kPodUid, kClaimName)).ok());
  EXPECT_EQ(Checkpoint().entries->at(0).driver_state->at(kDriver).devices->at(0).share_id,
            "share-1");
}

TEST_F(DraManagerTest, TemplateClaimMustBeOwnedByThePod) {
  ResourceClaim claim = Claim("generated-1", kClaimUid, kPodUid);
  claims_.Set(claim);
  Pod pod = PodWithClaim(kPodUid, kClaimName);
  pod.resource_claims[0] = {"claim", std::nullopt, std::string("template")};
  EXPECT_EQ(manager_->PrepareResources(pod).message(),
            "prepare dynamic resources: pod \"test-namespace/test-pod\": ResourceClaim not "
            "created yet");
  pod.resource_claim_statuses.push_back({"claim", std::string("generated-1")});
  EXPECT_EQ(manager_->PrepareResources(pod).message(),
            "prepare dynamic resources: ResourceClaim test-namespace/generated-1 was not created "
            "for Pod test-namespace/test-pod (Pod is not owner)");
  claim.owner_references.push_back({"v1", "Pod", "test-pod", kPodUid, true});
  claims_.Set(claim);
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  // A template that produced no claim: nothing to do.
  pod.resource_claim_statuses[0].resource_claim_name.reset();
  EXPECT_TRUE(manager_->PrepareResources(pod).ok());
}

// Feature gate DRAWorkloadResourceClaims: a claim made from a template for the pod's PodGroup,
// and reserved for that PodGroup, is the pod's; without the gate it is refused as upstream's
// kubelet refuses it.
TEST_F(DraManagerTest, AClaimOfThePodsPodGroupIsPreparedOnlyWithTheGate) {
  ResourceClaim claim = Claim("group-claim-1", kClaimUid, "unused");
  claim.reserved_for = {{"scheduling.k8s.io", "podgroups", "group", "group-uid"}};
  claim.owner_references.push_back(
      {"scheduling.k8s.io/v1alpha2", "PodGroup", "group", "group-uid", true});
  claims_.Set(claim);
  Pod pod = PodWithClaim(kPodUid, kClaimName);
  pod.pod_group_name = "group";
  pod.resource_claims[0] = {"claim", std::nullopt, std::string("template")};
  pod.resource_claim_statuses.push_back({"claim", std::string("group-claim-1")});
  EXPECT_EQ(manager_->PrepareResources(pod).message(),
            "prepare dynamic resources: ResourceClaim test-namespace/group-claim-1 was not "
            "created for Pod test-namespace/test-pod (Pod is not owner)");
  pod.resource_claims[0] = {"claim", std::string("group-claim-1"), std::nullopt};
  EXPECT_EQ(manager_->PrepareResources(pod).message(),
            absl::StrCat("prepare dynamic resources: pod test-pod (", kPodUid,
                         ") is not allowed to use ResourceClaim group-claim-1 (", kClaimUid, ")"));
  EXPECT_EQ(driver_->prepare_calls(), 0);

  workload_resource_claims_ = true;
  CreateManager();
  pod.resource_claims[0] = {"claim", std::nullopt, std::string("template")};
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_EQ(driver_->prepare_calls(), 1);
  EXPECT_TRUE(manager_->Prepared(pod));
  // Another group's pod may not use it.
  Pod stranger = PodWithClaim("other-pod-uid", "group-claim-1");
  stranger.pod_group_name = "other-group";
  EXPECT_EQ(manager_->PrepareResources(stranger).message(),
            absl::StrCat("prepare dynamic resources: pod test-pod (other-pod-uid) is not allowed "
                         "to use ResourceClaim group-claim-1 (",
                         kClaimUid, ")"));
}

// A claim in another namespace is not the pod's, whoever owns it (upstream's IsForPod), and a
// claim source that answers a lookup with another claim than the one asked for is refused:
// claims are cached and unprepared under the name they were asked by. Before, both were
// prepared, and the second could then never be unprepared: UnprepareResources found nothing
// under the pod's name, answered OK without calling the driver and left the claim recorded.
TEST_F(DraManagerTest, OnlyTheClaimAskedForInThePodsNamespaceIsPrepared) {
  ResourceClaim elsewhere = Claim("generated-1", kClaimUid, kPodUid);
  elsewhere.namespace_name = "other";
  elsewhere.owner_references.push_back({"v1", "Pod", "test-pod", kPodUid, true});
  claims_.SetAnswer(kNamespace, "generated-1", elsewhere);
  Pod pod = PodWithClaim(kPodUid, kClaimName);
  pod.resource_claims[0] = {"claim", std::nullopt, std::string("template")};
  pod.resource_claim_statuses.push_back({"claim", std::string("generated-1")});
  EXPECT_EQ(manager_->PrepareResources(pod).message(),
            "prepare dynamic resources: fetch ResourceClaim generated-1: the claim source "
            "answered with ResourceClaim other/generated-1 for test-namespace/generated-1");
  EXPECT_EQ(IsForPod(pod, elsewhere, false).message(),
            "ResourceClaim other/generated-1 is not in the same namespace as Pod "
            "test-namespace/test-pod");

  ResourceClaim unnamespaced = Claim(kClaimName, kClaimUid, kPodUid);
  unnamespaced.namespace_name = "";
  claims_.SetAnswer(kNamespace, kClaimName, unnamespaced);
  const Pod direct = PodWithClaim(kPodUid, kClaimName);
  EXPECT_EQ(manager_->PrepareResources(direct).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(driver_->prepare_calls(), 0);
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid));
  EXPECT_EQ(CheckpointedClaims(), 0u);
}

// Upstream's TestUnprepareResources.
TEST_F(DraManagerTest, TestUnprepareResources) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  const uint64_t before = manager_->ClaimsRevision();
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  const uint64_t prepared = manager_->ClaimsRevision();
  EXPECT_NE(prepared, before) << "what PodResources keeps its List answer by";
  ASSERT_TRUE(manager_->UnprepareResources(pod).ok());
  EXPECT_NE(manager_->ClaimsRevision(), prepared);
  EXPECT_EQ(driver_->unprepare_calls(), 1);
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid));
  EXPECT_EQ(CheckpointedClaims(), 0u);
  ASSERT_TRUE(manager_->UnprepareResources(pod).ok()) << "idempotent";
  EXPECT_EQ(driver_->unprepare_calls(), 1);
  EXPECT_EQ(metrics_.calls(),
            (std::vector<std::string>{
                absl::StrCat(kPrepareCall, " OK"),
                "test-driver.cdi.k8s.io "
                "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources OK"}));
  EXPECT_EQ(metrics_.operations(), (std::vector<std::string>{"PrepareResources is_error=false",
                                                             "UnprepareResources is_error=false",
                                                             "UnprepareResources is_error=false"}));
}

// ConnectionsTo: the connections a unix socket at `path` has accepted and that are still open,
// from /proc/net/unix, where each accepted socket shows its listener's path and is connected
// (state 03) while the listener itself is not.
size_t ConnectionsTo(const std::string& path) {
  std::ifstream table("/proc/net/unix");
  std::string line;
  std::getline(table, line);  // the header
  size_t connections = 0;
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string num, refs, protocol, flags, type, state, inode, name;
    fields >> num >> refs >> protocol >> flags >> type >> state >> inode >> name;
    if (name == path && state == "03") ++connections;
  }
  return connections;
}

// Upstream's node e2e "must be functional when plugin starts to listen on a service socket after
// registration": the driver registers before its service listens, the first prepare finds
// nobody there, and the next one, made as soon as the service listens, is answered. gRPC would
// have refused calls until its reconnect backoff ran out (a second at first, growing to two
// minutes).
TEST_F(DraManagerTest, MustBeFunctionalWhenPluginStartsToListenOnAServiceSocketAfterRegistration) {
  manager_.reset();
  driver_.reset();
  CreateManager();  // registers the driver at Socket(), where nobody listens yet
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  const absl::Status refused = manager_->PrepareResources(pod);
  ASSERT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(), "No such file or directory")) << refused;

  driver_ = std::make_unique<FakeDriver>(Socket());
  ASSERT_TRUE(driver_->started());
  driver_->OnPrepare(PrepareOneDeviceEach());
  const absl::Status prepared = manager_->PrepareResources(pod);
  EXPECT_TRUE(prepared.ok()) << prepared;
  EXPECT_EQ(driver_->prepare_calls(), 1);
}

// Upstream's node e2e "must be functional after service reconnect": the driver's service stops
// while a pod holds its claim and comes back; the pod's unprepare, refused while it was away,
// reaches it as soon as it listens again.
TEST_F(DraManagerTest, MustBeFunctionalAfterServiceReconnect) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  driver_.reset();
  const absl::Status refused = manager_->UnprepareResources(pod);
  ASSERT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_TRUE(manager_->PodMightNeedToUnprepareResources(kPodUid));

  driver_ = std::make_unique<FakeDriver>(Socket());
  ASSERT_TRUE(driver_->started());
  const absl::Status unprepared = manager_->UnprepareResources(pod);
  EXPECT_TRUE(unprepared.ok()) << unprepared;
  EXPECT_EQ(driver_->unprepare_calls(), 1);
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid));
}

// Upstream's node e2e "must use one gRPC connection for all service calls": the health stream,
// prepare and unprepare of a driver all go over one connection to its socket.
TEST_F(DraManagerTest, OneConnectionCarriesEveryCallToADriver) {
  manager_.reset();
  driver_.reset();  // before the next one binds the same path, which its end would remove
  FakeDriver::Options with_health;
  with_health.serve_health_v1 = true;
  driver_ = std::make_unique<FakeDriver>(Socket(), with_health);
  ASSERT_TRUE(driver_->started());
  driver_->OnPrepare(PrepareOneDeviceEach());
  ManagerOptions options;
  options.state_dir = dir_.path();
  options.claims = &claims_;
  options.resource_health_status = true;
  absl::StatusOr<std::unique_ptr<Manager>> manager = Manager::Create(std::move(options));
  ASSERT_TRUE(manager.ok()) << manager.status();
  manager_ = *std::move(manager);
  ASSERT_TRUE(manager_->drivers()
                  .RegisterPlugin(kDriver, Socket(), {"v1.DRAPlugin", "v1.DRAResourceHealth"})
                  .ok());
  ASSERT_TRUE(WaitFor([&] { return driver_->open_health_streams() == 1; }));
  EXPECT_EQ(ConnectionsTo(Socket()), 1u);

  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  ASSERT_TRUE(manager_->UnprepareResources(pod).ok());
  EXPECT_EQ(driver_->prepare_calls(), 1);
  EXPECT_EQ(driver_->unprepare_calls(), 1);
  EXPECT_EQ(driver_->open_health_streams(), 1);
  EXPECT_EQ(ConnectionsTo(Socket()), 1u);
}

// dra_resource_claims_in_use: prepared claims only, per driver and under "<any>".
TEST_F(DraManagerTest, ClaimsInUseCountsPreparedClaimsPerDriver) {
  EXPECT_EQ(manager_->ClaimsInUse(), (std::map<std::string, int64_t>{{"<any>", 0}}));
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  claims_.Set(Claim("second", "second-uid", kPodUid));
  Pod pod = PodWithClaim(kPodUid, kClaimName);
  pod.resource_claims.push_back({"other", std::string("second"), std::nullopt});
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_EQ(manager_->ClaimsInUse(), (std::map<std::string, int64_t>{{"<any>", 2}, {kDriver, 2}}));
  CreateManager();
  EXPECT_EQ(manager_->ClaimsInUse(), (std::map<std::string, int64_t>{{"<any>", 0}}))
      << "known from the checkpoint, not prepared since the start";
  ASSERT_TRUE(manager_->UnprepareResources(pod).ok());
}

TEST_F(DraManagerTest,
       TestUnprepareResources_ShouldUnprepareUsingCacheWhenResourceClaimStatusesIsMissing) {
  ResourceClaim claim = Claim("generated-1", kClaimUid, kPodUid);
  claim.owner_references.push_back({"v1", "Pod", "test-pod", kPodUid, true});
  claims_.Set(claim);
  Pod pod = PodWithClaim(kPodUid, kClaimName);
  pod.resource_claims[0] = {"claim", std::nullopt, std::string("template")};
  pod.resource_claim_statuses.push_back({"claim", std::string("generated-1")});
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  pod.resource_claim_statuses.clear();  // upstream #139772: the status is gone at termination
  ASSERT_TRUE(manager_->UnprepareResources(pod).ok());
  EXPECT_EQ(driver_->unprepare_calls(), 1);
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid));
}

TEST_F(DraManagerTest, TestUnprepareResources_DriverReturnsNilValue) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  driver_->OnUnprepare([](const draapi::v1::NodeUnprepareResourcesRequest& request) {
    draapi::v1::NodeUnprepareResourcesResponse response;
    (*response.mutable_claims())[request.claims(0).uid()];
    return response;
  });
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_TRUE(manager_->UnprepareResources(pod).ok());
}

TEST_F(DraManagerTest, TestUnprepareResources_DriverErrorAndMissingDriverKeepTheClaim) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  driver_->OnUnprepare(FailUnprepare("device busy"));
  EXPECT_EQ(manager_->UnprepareResources(pod).message(),
            "unprepare dynamic resources: NodeUnprepareResources failed for ResourceClaim "
            "test-claim: device busy");
  EXPECT_TRUE(manager_->PodMightNeedToUnprepareResources(kPodUid));
  manager_->drivers().DeRegisterPlugin(kDriver, Socket());
  EXPECT_EQ(manager_->UnprepareResources(pod).message(),
            "unprepare dynamic resources: DRA driver test-driver.cdi.k8s.io is not registered");
  EXPECT_EQ(CheckpointedClaims(), 1u) << "kept until the driver lets it go";
}

// A claim shared by two pods is prepared once and unprepared when the last one lets go.
TEST_F(DraManagerTest, SharedClaimIsPreparedOnceAndUnpreparedLast) {
  const auto [pod1, pod2] = SharedClaimPods();
  ASSERT_TRUE(manager_->PrepareResources(pod1).ok());
  ASSERT_TRUE(manager_->PrepareResources(pod2).ok());
  EXPECT_EQ(driver_->prepare_calls(), 1);
  ASSERT_TRUE(manager_->UnprepareResources(pod1).ok());
  EXPECT_EQ(driver_->unprepare_calls(), 0);
  EXPECT_EQ(Checkpoint().entries->at(0).pod_uids, std::set<std::string>{"pod-2"});
  ASSERT_TRUE(manager_->UnprepareResources(pod2).ok());
  EXPECT_EQ(driver_->unprepare_calls(), 1);
}

// A pod whose reference to a shared claim was taken away (its unprepare went through, its removal
// then failed and it stays) is not Prepared: the host's next sync gives the reference back, so
// that the claim's other pod leaving does not unprepare it under this one.
TEST_F(DraManagerTest, APodWhoseReferenceToASharedClaimWasTakenIsNotPrepared) {
  const auto [pod1, pod2] = SharedClaimPods();
  ASSERT_TRUE(manager_->PrepareResources(pod1).ok());
  ASSERT_TRUE(manager_->PrepareResources(pod2).ok());
  EXPECT_TRUE(manager_->Prepared(pod1));
  ASSERT_TRUE(manager_->UnprepareResources(pod1).ok());
  EXPECT_FALSE(manager_->Prepared(pod1));
  EXPECT_TRUE(manager_->Prepared(pod2));
  ASSERT_TRUE(manager_->PrepareResources(pod1).ok());
  EXPECT_TRUE(manager_->Prepared(pod1));
  EXPECT_EQ(driver_->prepare_calls(), 1);
  ASSERT_TRUE(manager_->UnprepareResources(pod2).ok());
  EXPECT_EQ(driver_->unprepare_calls(), 0) << "pod-1 still uses it";
}

// Unpreparing a pod whose spec names a claim that only another pod holds leaves the claim
// prepared for that pod: beyond upstream, which unprepares and forgets a claim recorded for one
// pod whichever pod that is.
TEST_F(DraManagerTest, UnpreparingAPodLeavesAClaimOnlyAnotherPodHolds) {
  const auto [pod1, pod2] = SharedClaimPods();
  ASSERT_TRUE(manager_->PrepareResources(pod2).ok());
  ASSERT_TRUE(manager_->UnprepareResources(pod1).ok());
  EXPECT_EQ(driver_->unprepare_calls(), 0);
  EXPECT_TRUE(manager_->Prepared(pod2));
  EXPECT_EQ(CheckpointedClaims(), 1u);
}

// A pod whose two claims name the same ResourceClaim has it prepared once: beyond upstream,
// which sends it to the driver twice and then fails on the answer's one entry for it.
TEST_F(DraManagerTest, AClaimThePodNamesTwiceIsPreparedOnce) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  Pod pod = PodWithClaim(kPodUid, kClaimName, {{"claim", ""}, {"again", ""}});
  pod.resource_claims.push_back({"again", kClaimName, std::nullopt});
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_EQ(driver_->prepare_calls(), 1);
  EXPECT_TRUE(manager_->Prepared(pod));
  ASSERT_TRUE(manager_->UnprepareResources(pod).ok());
  EXPECT_EQ(driver_->unprepare_calls(), 1);
  EXPECT_EQ(CheckpointedClaims(), 0u);
}

// The same at the unprepare of a pod the checkpoint does not name (a kubelet's, whose entry for
// the claim lists no pod): the pod's own two references are one claim, unprepared once.
TEST_F(DraManagerTest, AClaimThePodNamesTwiceIsUnpreparedOnceWhenOnlyThePodNamesIt) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  Pod pod = PodWithClaim(kPodUid, kClaimName, {{"claim", ""}, {"again", ""}});
  pod.resource_claims.push_back({"again", kClaimName, std::nullopt});
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  manager_.reset();
  CheckpointData data = Checkpoint();
  ASSERT_TRUE(data.entries.has_value() && data.entries->size() == 1);
  data.entries->front().pod_uids = std::set<std::string>{};
  ASSERT_TRUE(FileStore(dir_.path()).Write(kCheckpointName, Encode(data)).ok());
  CreateManager();
  ASSERT_TRUE(manager_->UnprepareResources(pod).ok());
  EXPECT_EQ(driver_->unprepare_calls(), 1);
  EXPECT_EQ(CheckpointedClaims(), 0u);
}

// A claim whose unprepare failed may be half undone by its driver: a pod that comes to share it
// has it prepared again (beyond upstream, which keeps it marked prepared and skips the driver).
TEST_F(DraManagerTest, AClaimWhoseUnprepareFailedIsPreparedAgainForThePodThatSharesItNext) {
  const auto [pod1, pod2] = SharedClaimPods();
  ASSERT_TRUE(manager_->PrepareResources(pod1).ok());
  driver_->OnUnprepare(FailUnprepare("device busy"));
  EXPECT_FALSE(manager_->UnprepareResources(pod1).ok());
  ASSERT_TRUE(manager_->PrepareResources(pod2).ok());
  EXPECT_EQ(driver_->prepare_calls(), 2);
  EXPECT_EQ(Checkpoint().entries->at(0).pod_uids, (std::set<std::string>{"pod-1", "pod-2"}));
}

// A claim is never prepared and unprepared at once: a pod that comes to share a claim while its
// last pod's unprepare waits on the driver waits for that unprepare, then prepares the claim
// again (upstream's manager would call the driver's prepare meanwhile, then the unprepare would
// drop the claim from the cache under the new pod).
TEST_F(DraManagerTest, APrepareWaitsForAnUnprepareOfTheSameClaim) {
  const std::pair<Pod, Pod> pods = SharedClaimPods();
  const Pod& pod1 = pods.first;
  const Pod& pod2 = pods.second;
  ASSERT_TRUE(manager_->PrepareResources(pod1).ok());
  absl::Notification unprepare_entered;
  absl::Notification unprepare_may_answer;
  std::atomic<bool> unpreparing{false};
  std::atomic<int> prepared_while_unpreparing{0};
  driver_->OnUnprepare([&](const draapi::v1::NodeUnprepareResourcesRequest& request) {
    unpreparing = true;
    unprepare_entered.Notify();
    unprepare_may_answer.WaitForNotification();
    unpreparing = false;
    draapi::v1::NodeUnprepareResourcesResponse response;
    (*response.mutable_claims())[request.claims(0).uid()];
    return response;
  });
  driver_->OnPrepare([&](const draapi::v1::NodePrepareResourcesRequest& request) {
    if (unpreparing) ++prepared_while_unpreparing;
    return PrepareOneDeviceEach()(request);
  });
  std::thread removal([&] { EXPECT_TRUE(manager_->UnprepareResources(pod1).ok()); });
  unprepare_entered.WaitForNotification();
  std::thread admission([&] { EXPECT_TRUE(manager_->PrepareResources(pod2).ok()); });
  // The new pod's prepare must not reach the driver while the unprepare waits there; with
  // nothing to hold it back it would within this bound.
  EXPECT_FALSE(
      WaitFor([&] { return driver_->prepare_calls() == 2; }, std::chrono::milliseconds(300)));
  unprepare_may_answer.Notify();
  removal.join();
  admission.join();
  EXPECT_EQ(prepared_while_unpreparing, 0);
  EXPECT_EQ(driver_->prepare_calls(), 2) << "prepared again after the unprepare";
  absl::StatusOr<std::vector<std::string>> cdi = manager_->GetResources(pod2, pod2.containers[0]);
  ASSERT_TRUE(cdi.ok()) << cdi.status();
  EXPECT_EQ(cdi->size(), 1u);
  EXPECT_EQ(Checkpoint().entries->at(0).pod_uids, std::set<std::string>{"pod-2"});
}

// Upstream's TestPodMightNeedToUnprepareResources.
TEST_F(DraManagerTest, TestPodMightNeedToUnprepareResources) {
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid));
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  ASSERT_TRUE(manager_->PrepareResources(PodWithClaim(kPodUid, kClaimName)).ok());
  EXPECT_TRUE(manager_->PodMightNeedToUnprepareResources(kPodUid));
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources("another-pod"));
}

// The claim the scheduler made for a pod's extended resources that DRA devices back (KEP-5004,
// gate DRAExtendedResource): prepared in the same call as the pod's own claims; each container
// gets the devices of the requests mapped to a resource it requests; unprepared with the pod.
// Without the gate the claim is not the manager's business: it is not even fetched.
TEST_F(DraManagerTest, ExtendedResourceClaimIsPreparedAndMappedToItsContainers) {
  CreateManager(kDefaultCallTimeout, /*extended_resource=*/true);
  constexpr char kExtended[] = "test-pod-extended-resources-x7";
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  ResourceClaim extended = Claim(kExtended, "extended-uid", kPodUid);
  extended.allocation = std::vector<DeviceRequestAllocationResult>{
      {"container-0-request-0", kDriver, "test-pool", "gpu-a", std::nullopt},
      {"container-1-request-0", kDriver, "test-pool", "gpu-b", std::nullopt}};
  claims_.Set(extended);
  // Filled on the driver's gRPC thread and read here once PrepareResources has returned: the
  // RPC orders the two, but ThreadSanitizer cannot see through it, so a lock says it.
  absl::Mutex calls_mu;
  std::vector<size_t> claims_per_call;
  auto calls = [&] {
    absl::MutexLock lock(&calls_mu);
    return claims_per_call;
  };
  driver_->OnPrepare([&](const draapi::v1::NodePrepareResourcesRequest& request) {
    {
      absl::MutexLock lock(&calls_mu);
      claims_per_call.push_back(static_cast<size_t>(request.claims_size()));
    }
    draapi::v1::NodePrepareResourcesResponse response;
    for (const auto& claim : request.claims()) {
      auto& answer = (*response.mutable_claims())[claim.uid()];
      if (claim.uid() != "extended-uid") {
        auto* device = answer.add_devices();
        device->set_pool_name("test-pool");
        device->set_device_name("test-device");
        device->add_request_names("test-request");
        device->add_cdi_device_ids("vendor.com/test=claim");
        continue;
      }
      for (const char* name : {"a", "b"}) {
        auto* device = answer.add_devices();
        device->set_pool_name("test-pool");
        device->set_device_name(absl::StrCat("gpu-", name));
        device->add_request_names(name[0] == 'a' ? "container-0-request-0"
                                                 : "container-1-request-0");
        device->add_cdi_device_ids(absl::StrCat("vendor.com/gpu=gpu-", name));
      }
    }
    return response;
  });

  Pod pod = PodWithClaim(kPodUid, kClaimName);
  pod.containers[0].requested_resources = {"example.com/gpu"};
  pod.containers.push_back({"sidecar", {}, {"example.com/gpu", "example.com/nic"}});
  // Mapped, but it does not request the resource (a zero request): no devices for it.
  pod.containers.push_back({"idle", {}, {}});
  pod.extended_resource_claim_status =
      PodExtendedResourceClaimStatus{{{"container", "example.com/gpu", "container-0-request-0"},
                                      {"sidecar", "example.com/gpu", "container-1-request-0"},
                                      {"idle", "example.com/gpu", "container-2-request-0"}},
                                     kExtended};
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_EQ(calls(), std::vector<size_t>{2}) << "one call for the driver, both claims";
  EXPECT_EQ(CheckpointedClaims(), 2u);
  EXPECT_EQ(*manager_->GetResources(pod, pod.containers[0]),
            (std::vector<std::string>{"vendor.com/test=claim", "vendor.com/gpu=gpu-a"}));
  EXPECT_EQ(*manager_->GetResources(pod, pod.containers[1]),
            std::vector<std::string>{"vendor.com/gpu=gpu-b"});
  EXPECT_TRUE(manager_->GetResources(pod, pod.containers[2])->empty());
  absl::StatusOr<std::vector<ClaimInfoState>> sidecar =
      manager_->GetContainerClaimInfos(pod, pod.containers[1]);
  ASSERT_TRUE(sidecar.ok()) << sidecar.status();
  ASSERT_EQ(sidecar->size(), 1u);
  EXPECT_EQ((*sidecar)[0].claim_name, kExtended);
  EXPECT_EQ(manager_->GetContainerClaimInfos(pod, pod.containers[2])->size(), 1u)
      << "a mapping names the container";

  ASSERT_TRUE(manager_->UnprepareResources(pod).ok());
  EXPECT_EQ(CheckpointedClaims(), 0u);

  // Without the gate: only the pod's own claim, and the scheduler's claim is never fetched.
  CreateManager(kDefaultCallTimeout, /*extended_resource=*/false);
  claims_.Remove(kExtended);
  {
    absl::MutexLock lock(&calls_mu);
    claims_per_call.clear();
  }
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_EQ(calls(), std::vector<size_t>{1});
  EXPECT_EQ(*manager_->GetResources(pod, pod.containers[1]), std::vector<std::string>{});
  EXPECT_EQ(CheckpointedClaims(), 1u);
}

// Upstream's TestGetResources, "same claim referenced by multiple requests": each request of
// the container gets the devices that serve it.
TEST_F(DraManagerTest, TestGetResources) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  driver_->OnPrepare([](const draapi::v1::NodePrepareResourcesRequest& request) {
    draapi::v1::NodePrepareResourcesResponse response;
    auto& claim = (*response.mutable_claims())[request.claims(0).uid()];
    for (const char* name : {"req1", "req2"}) {
      auto* device = claim.add_devices();
      device->set_pool_name("pool");
      device->set_device_name(absl::StrCat("dev-", name));
      device->add_request_names(name);
      device->add_cdi_device_ids(absl::StrCat("vendor.com/class=", name));
    }
    return response;
  });
  const Pod pod = PodWithClaim(kPodUid, kClaimName, {{"claim", "req2"}, {"claim", "req1"}});
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_EQ(*manager_->GetResources(pod, pod.containers[0]),
            (std::vector<std::string>{"vendor.com/class=req2", "vendor.com/class=req1"}));
  const Container whole{"other", {{"claim", ""}}, {}};
  EXPECT_EQ(*manager_->GetResources(pod, whole),
            (std::vector<std::string>{"vendor.com/class=req1", "vendor.com/class=req2"}));
  const Pod unprepared = PodWithClaim(kPodUid, "never-prepared");
  EXPECT_EQ(manager_->GetResources(unprepared, unprepared.containers[0]).status().message(),
            "internal error: unable to get claim info for ResourceClaim never-prepared in "
            "namespace test-namespace");
}

// Upstream's TestGetContainerClaimInfos.
TEST_F(DraManagerTest, TestGetContainerClaimInfos) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  absl::StatusOr<std::vector<ClaimInfoState>> infos =
      manager_->GetContainerClaimInfos(pod, pod.containers[0]);
  ASSERT_TRUE(infos.ok()) << infos.status();
  ASSERT_EQ(infos->size(), 1u);
  EXPECT_EQ((*infos)[0].claim_name, kClaimName);
  EXPECT_TRUE(manager_->GetContainerClaimInfos(pod, Container{"none", {}, {}})->empty());
  const Pod other = PodWithClaim(kPodUid, "unknown");
  EXPECT_EQ(manager_->GetContainerClaimInfos(other, other.containers[0]).status().message(),
            "unable to get information for ResourceClaim unknown");
  // "should fail when none of the supported fields are set": neither a claim's name nor a
  // template's; the pod claim's name is quoted as Go's %q quotes it.
  Pod unnamed = PodWithClaim(kPodUid, kClaimName, {{"claim\"1", ""}});
  unnamed.resource_claims[0] = {"claim\"1", std::nullopt, std::nullopt};
  EXPECT_EQ(manager_->GetContainerClaimInfos(unnamed, unnamed.containers[0]).status().message(),
            "pod \"test-namespace/test-pod\", spec.resourceClaim \"claim\\\"1\": none of the "
            "supported fields are set");
}

// Upstream's TestParallelPrepareUnprepareResources: 30 pods, each with its own claim, prepared
// and unprepared at once.
TEST_F(DraManagerTest, TestParallelPrepareUnprepareResources) {
  constexpr int kPods = 30;
  for (int i = 0; i < kPods; ++i) {
    claims_.Set(
        Claim(absl::StrCat("claim-", i), absl::StrCat("claim-uid-", i), absl::StrCat("pod-", i)));
  }
  std::vector<absl::Status> results(kPods);
  std::vector<std::thread> threads;
  for (int i = 0; i < kPods; ++i) {
    threads.emplace_back([&, i] {
      const Pod pod = PodWithClaim(absl::StrCat("pod-", i), absl::StrCat("claim-", i));
      results[i] = manager_->PrepareResources(pod);
      if (results[i].ok()) results[i] = manager_->UnprepareResources(pod);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kPods; ++i) EXPECT_TRUE(results[i].ok()) << i << ": " << results[i];
  EXPECT_EQ(driver_->prepare_calls(), kPods);
  EXPECT_EQ(driver_->unprepare_calls(), kPods);
  EXPECT_EQ(CheckpointedClaims(), 0u);
}

// A driver that fails one claim of a pod (issue 21's faults): the pod is not prepared and says
// which claim and why, another pod of the same driver is prepared meanwhile, and the pod's
// retry, once the driver answers, prepares both of its claims.
TEST_F(DraManagerTest, ADriverErrorForOneClaimFailsOnlyThatPodUntilItsRetry) {
  claims_.Set(Claim("claim-a", "uid-a", kPodUid));
  claims_.Set(Claim("claim-b", "uid-b", kPodUid));
  claims_.Set(Claim("claim-c", "uid-c", "other-pod"));
  Pod pod = PodWithClaim(kPodUid, "claim-a");
  pod.resource_claims.push_back({"second", "claim-b", std::nullopt});
  pod.containers[0].claims.push_back({"second", ""});
  std::atomic<bool> failing{true};
  driver_->OnPrepare([&](const draapi::v1::NodePrepareResourcesRequest& request) {
    draapi::v1::NodePrepareResourcesResponse response = PrepareOneDeviceEach()(request);
    if (failing && response.claims().contains("uid-b")) {
      (*response.mutable_claims())["uid-b"] = draapi::v1::NodePrepareResourceResponse();
      (*response.mutable_claims())["uid-b"].set_error("device busy");
    }
    return response;
  });

  EXPECT_EQ(manager_->PrepareResources(pod).message(),
            "prepare dynamic resources: NodePrepareResources failed for ResourceClaim claim-b: "
            "device busy");
  EXPECT_TRUE(manager_->PrepareResources(PodWithClaim("other-pod", "claim-c")).ok());
  failing = false;
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  absl::StatusOr<std::vector<std::string>> devices = manager_->GetResources(pod, pod.containers[0]);
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_EQ(devices->size(), 2u);
}

// A driver that answers for a claim it was not asked about: the call is refused, as upstream, and
// nothing is recorded as prepared; the retry with a sane answer prepares the pod.
TEST_F(DraManagerTest, AResultForAClaimNotAskedAboutFailsThePrepare) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  std::atomic<bool> confused{true};
  driver_->OnPrepare([&](const draapi::v1::NodePrepareResourcesRequest& request) {
    draapi::v1::NodePrepareResourcesResponse response = PrepareOneDeviceEach()(request);
    if (confused) (*response.mutable_claims())["uid-nobody-asked-for"];
    return response;
  });
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  EXPECT_EQ(manager_->PrepareResources(pod).message(),
            "prepare dynamic resources: NodePrepareResources returned result for unknown claim "
            "UID uid-nobody-asked-for");
  absl::StatusOr<std::vector<std::string>> devices = manager_->GetResources(pod, pod.containers[0]);
  EXPECT_TRUE(devices.ok() && devices->empty()) << "no device of the refused answer is used";
  confused = false;
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_EQ(manager_->GetResources(pod, pod.containers[0])->size(), 1u);
}

// A driver that restarts while it prepares (it goes away mid-call and a new instance serves the
// same socket): the call fails, and the retry reaches the new instance through the same
// endpoint.
TEST_F(DraManagerTest, ADriverRestartedMidCallIsReachedAgainOnTheRetry) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  absl::Notification called;
  absl::Notification release;
  driver_->OnPrepare([&](const draapi::v1::NodePrepareResourcesRequest& request) {
    called.Notify();
    release.WaitForNotificationWithTimeout(absl::Seconds(30));
    return PrepareOneDeviceEach()(request);
  });
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  absl::Status first;
  std::thread prepare([&] { first = manager_->PrepareResources(pod); });
  ASSERT_TRUE(called.WaitForNotificationWithTimeout(absl::Seconds(30)));
  // The old instance dies with the call under way; a new one then takes the socket.
  std::thread crash([&] { driver_->Crash(); });
  prepare.join();
  release.Notify();
  crash.join();
  driver_ = std::make_unique<FakeDriver>(Socket());
  ASSERT_TRUE(driver_->started());
  driver_->OnPrepare(PrepareOneDeviceEach());
  EXPECT_TRUE(absl::StartsWith(first.message(), "prepare dynamic resources: NodePrepareResources"))
      << first;
  absl::Status retried;
  EXPECT_TRUE(WaitFor([&] {
    retried = manager_->PrepareResources(pod);
    return retried.ok();
  })) << retried;
  EXPECT_EQ(driver_->prepare_calls(), 1) << "the new instance prepared it";
}

// After a restart the claims are known (the pod can be unprepared) but not prepared: the next
// PrepareResources calls the driver again, as upstream.
TEST_F(DraManagerTest, RestartKnowsTheClaimsAndPreparesThemAgain) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  CreateManager();
  EXPECT_TRUE(manager_->PodMightNeedToUnprepareResources(kPodUid));
  EXPECT_EQ(*manager_->GetResources(pod, pod.containers[0]),
            std::vector<std::string>{"test-driver.cdi.k8s.io/test=test-claim"});
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_EQ(driver_->prepare_calls(), 2);
}

// DRAOptionalNodeOperations (KEP-5945): a driver whose devices in a claim all skip an operation
// is not called for it, nor looked up: a control-plane driver needs no node plugin.

// The claim's device of a second driver, which has no node plugin, skips `skips`.
ResourceClaim ClaimWithControlPlaneDevice(std::vector<std::string> skips) {
  ResourceClaim claim = Claim(kClaimName, kClaimUid, kPodUid);
  DeviceRequestAllocationResult& device = claim.allocation->emplace_back(
      DeviceRequestAllocationResult{"test-request", "control-plane.example.com", "central-pool",
                                    "virtual-device-1", std::nullopt});
  device.skip_node_operations = std::move(skips);
  return claim;
}

TEST_F(DraManagerTest, OptionalNodeOperationsADriverWhoseDevicesSkipEverythingIsNeverCalled) {
  optional_node_operations_ = true;
  CreateManager();
  claims_.Set(ClaimWithControlPlaneDevice({"*"}));
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  ASSERT_TRUE(manager_->PrepareResources(pod).ok())
      << "control-plane.example.com is not registered";
  EXPECT_EQ(driver_->prepare_calls(), 1) << "the other driver is called as ever";
  EXPECT_TRUE(manager_->Prepared(pod));
  EXPECT_EQ(*manager_->GetResources(pod, pod.containers[0]),
            std::vector<std::string>{"test-driver.cdi.k8s.io/test=test-claim"});
  const CheckpointData data = Checkpoint();
  ASSERT_TRUE(data.entries.has_value() && data.entries->size() == 1);
  const std::map<std::string, DriverState>& drivers = *(*data.entries)[0].driver_state;
  EXPECT_EQ(drivers.at("control-plane.example.com").skip_node_operations,
            (std::vector<std::string>{"NodePrepareResources", "NodeUnprepareResources"}));
  EXPECT_EQ(drivers.at(kDriver).skip_node_operations, std::nullopt);

  CreateManager();  // what is skipped comes back from the checkpoint
  ASSERT_TRUE(manager_->UnprepareResources(pod).ok());
  EXPECT_EQ(driver_->unprepare_calls(), 1);
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid));
  EXPECT_EQ(CheckpointedClaims(), 0u);
}

// A driver is skipped only when every one of its devices in the claim skips the operation.
TEST_F(DraManagerTest, OptionalNodeOperationsOneDeviceThatSkipsNothingKeepsItsDriversCalls) {
  optional_node_operations_ = true;
  CreateManager();
  ResourceClaim claim = Claim(kClaimName, kClaimUid, kPodUid);
  (*claim.allocation)[0].skip_node_operations = {"*"};
  claim.allocation->push_back({"test-request", kDriver, "test-pool", "other-device", std::nullopt});
  claims_.Set(claim);
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  ASSERT_TRUE(manager_->UnprepareResources(pod).ok());
  EXPECT_EQ(driver_->prepare_calls(), 1);
  EXPECT_EQ(driver_->unprepare_calls(), 1);
}

// Each operation on its own; a value the manager does not know skips nothing.
TEST_F(DraManagerTest, OptionalNodeOperationsEachOperationIsSkippedOnItsOwn) {
  optional_node_operations_ = true;
  CreateManager();
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  for (const auto& [skips, prepares, unprepares] :
       {std::tuple{std::vector<std::string>{"NodeUnprepareResources"}, 1, 0},
        std::tuple{std::vector<std::string>{"NodePrepareResources"}, 0, 1},
        std::tuple{std::vector<std::string>{"NodeUnprepareResources", "NodePrepareResources"}, 0,
                   0},
        std::tuple{std::vector<std::string>{"SomeLaterOperation"}, 1, 1}}) {
    ResourceClaim claim = Claim(kClaimName, kClaimUid, kPodUid);
    (*claim.allocation)[0].skip_node_operations = skips;
    claims_.Set(claim);
    const int prepared_before = driver_->prepare_calls();
    const int unprepared_before = driver_->unprepare_calls();
    ASSERT_TRUE(manager_->PrepareResources(pod).ok()) << skips[0];
    ASSERT_TRUE(manager_->UnprepareResources(pod).ok()) << skips[0];
    EXPECT_EQ(driver_->prepare_calls() - prepared_before, prepares) << skips[0];
    EXPECT_EQ(driver_->unprepare_calls() - unprepared_before, unprepares) << skips[0];
  }
}

// Without the gate a claim that skips anything is refused before anything is recorded, yet one
// prepared while the gate was on is still unprepared without the drivers it skips.
TEST_F(DraManagerTest, OptionalNodeOperationsWithoutTheGateAClaimThatSkipsIsRefused) {
  claims_.Set(ClaimWithControlPlaneDevice({"*"}));
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  absl::Status prepared = manager_->PrepareResources(pod);
  EXPECT_EQ(prepared.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(prepared.message(),
            "prepare dynamic resources: ResourceClaim test-claim: DRAOptionalNodeOperations "
            "feature gate is disabled on kubelet");
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid));
  EXPECT_EQ(driver_->prepare_calls(), 0);

  optional_node_operations_ = true;
  CreateManager();
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  optional_node_operations_ = false;
  CreateManager();
  EXPECT_TRUE(manager_->UnprepareResources(pod).ok());
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid));
}

// With FinalWrite::kCarried the devices the driver returned wait for the host's next write,
// which carries them: a pod costs one write before the driver call and none of its own after.
TEST_F(DraManagerTest, ACarriedFinalWriteRidesOnTheHostsNextWrite) {
  RecordingWriter writer;
  writer_ = &writer;
  CreateManager();
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  auto devices_on_disk = [&] {
    const CheckpointData data = Checkpoint();
    if (!data.entries.has_value() || data.entries->size() != 1) return size_t{99};
    const ClaimInfoState& state = data.entries->front();
    return state.driver_state->at(kDriver).devices.value_or(std::vector<CheckpointDevice>{}).size();
  };
  ASSERT_TRUE(manager_->PrepareResources(pod, FinalWrite::kCarried).ok());
  EXPECT_EQ(driver_->prepare_calls(), 1);
  EXPECT_EQ(writer.writes(), std::vector<std::vector<std::string>>{{kCheckpointName}})
      << "the pod is recorded with its claim before the driver is called, and only then";
  EXPECT_EQ(devices_on_disk(), 0U);
  EXPECT_EQ(*manager_->GetResources(pod, pod.containers[0]),
            std::vector<std::string>{"test-driver.cdi.k8s.io/test=test-claim"})
      << "prepared all the same";

  const FileStore host(dir_.Sub("host"));
  ASSERT_TRUE(manager_->WriteTogether({{&host, "record", "with the pod"}}).ok());
  EXPECT_EQ(writer.writes().back(), (std::vector<std::string>{kCheckpointName, "record"}));
  EXPECT_EQ(devices_on_disk(), 1U);
  EXPECT_EQ(*host.Read("record"), "with the pod");

  // Nothing left: the host's file goes alone, and Flush writes nothing.
  ASSERT_TRUE(manager_->WriteTogether({{&host, "record", "again"}}).ok());
  EXPECT_EQ(writer.writes().back(), std::vector<std::string>{"record"});
  ASSERT_TRUE(manager_->Flush().ok());
  EXPECT_EQ(writer.writes().size(), 3U);

  // Without a carrier, Flush makes a carried final write durable.
  ASSERT_TRUE(manager_->UnprepareResources(pod).ok());
  ASSERT_TRUE(manager_->PrepareResources(pod, FinalWrite::kCarried).ok());
  EXPECT_EQ(devices_on_disk(), 0U);
  ASSERT_TRUE(manager_->Flush().ok());
  EXPECT_EQ(devices_on_disk(), 1U);
}

// A state read back with "DriverState":null (valid for its checksum) is prepared as any other:
// the driver's devices get a map made for them.
TEST_F(DraManagerTest, AStateReadBackWithoutItsDriverMapIsPreparedAgain) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  const Pod pod = PodWithClaim(kPodUid, kClaimName);
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  manager_.reset();
  CheckpointData data = Checkpoint();
  ASSERT_TRUE(data.entries.has_value() && data.entries->size() == 1);
  data.entries->front().driver_state.reset();
  ASSERT_TRUE(FileStore(dir_.path()).Write(kCheckpointName, Encode(data)).ok());
  CreateManager();
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_EQ(driver_->prepare_calls(), 2);
  EXPECT_EQ(*manager_->GetResources(pod, pod.containers[0]),
            std::vector<std::string>{"test-driver.cdi.k8s.io/test=test-claim"});
  EXPECT_EQ(Checkpoint().entries->front().driver_state->at(kDriver).devices->size(), 1U);
}

TEST_F(DraManagerTest, CorruptCheckpointIsKeptAsideAndStartsEmpty) {
  manager_.reset();
  FileStore store(dir_.path());
  ASSERT_TRUE(store.Write(kCheckpointName, "{\"Data\":\"x\",\"Checksum\":1}").ok());
  CreateManager();
  EXPECT_EQ(*store.Read("dra_manager_state.corrupt"), "{\"Data\":\"x\",\"Checksum\":1}");
  EXPECT_EQ(Checkpoint(), CheckpointData{});

  // A later damage is kept beside the first one's copy, not over it.
  manager_.reset();
  ASSERT_TRUE(store.Write(kCheckpointName, "{\"Data\":\"y\",\"Checksum\":2}").ok());
  CreateManager();
  EXPECT_EQ(*store.Read("dra_manager_state.corrupt"), "{\"Data\":\"x\",\"Checksum\":1}");
  EXPECT_EQ(*store.Read("dra_manager_state.corrupt.1"), "{\"Data\":\"y\",\"Checksum\":2}");
  EXPECT_EQ(Checkpoint(), CheckpointData{});
}

// Starting empty writes a new checkpoint: a damaged one whose rename fails (here every copy's
// name is a folder with a file in it) stops Create and stays as it was, never written over.
TEST_F(DraManagerTest, ACorruptCheckpointThatCannotBeKeptAsideIsNotWrittenOver) {
  manager_.reset();
  FileStore store(dir_.path());
  const std::string damaged = "{\"Data\":\"x\",\"Checksum\":1}";
  ASSERT_TRUE(store.Write(kCheckpointName, damaged).ok());
  for (const std::string& copy : DamagedCopyNames(kCheckpointName)) {
    std::filesystem::create_directory(dir_.Sub(copy));
    ASSERT_TRUE(FileStore(dir_.Sub(copy)).Write("taken", "").ok());
  }
  ManagerOptions options;
  options.state_dir = dir_.path();
  options.claims = &claims_;
  absl::StatusOr<std::unique_ptr<Manager>> manager = Manager::Create(std::move(options));
  ASSERT_FALSE(manager.ok());
  EXPECT_TRUE(absl::StrContains(manager.status().message(),
                                "cannot move aside the unusable DRA checkpoint"))
      << manager.status();
  EXPECT_EQ(*store.Read(kCheckpointName), damaged);
}

// A checkpoint write killed before its rename leaves a temporary file in the state folder:
// Create removes it when the manager writes alone, and leaves it to a host's writer.
TEST_F(DraManagerTest, CreateRemovesTheTemporaryFilesOfInterruptedCheckpointWrites) {
  manager_.reset();
  const std::filesystem::path left = dir_.Sub(absl::StrCat(".", kCheckpointName, ".tmp-x1Y2z3"));
  std::ofstream(left) << "half";
  RecordingWriter writer;
  writer_ = &writer;
  CreateManager();
  EXPECT_TRUE(std::filesystem::exists(left));
  writer_ = nullptr;
  CreateManager();
  EXPECT_FALSE(std::filesystem::exists(left));
  EXPECT_EQ(Checkpoint(), CheckpointData{});
}

// Reconcile unprepares the claims of pods the host no longer runs.
TEST_F(DraManagerTest, ReconcileUnpreparesPodsNoLongerActive) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  claims_.Set(Claim("kept", "kept-uid", "running-pod"));
  ASSERT_TRUE(manager_->PrepareResources(PodWithClaim(kPodUid, kClaimName)).ok());
  ASSERT_TRUE(manager_->PrepareResources(PodWithClaim("running-pod", "kept")).ok());
  ASSERT_TRUE(manager_->Reconcile({"running-pod"}).ok());
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid));
  EXPECT_TRUE(manager_->PodMightNeedToUnprepareResources("running-pod"));
  EXPECT_EQ(driver_->unprepare_calls(), 1);
}

// Each pod's unprepare runs inside the host's step, which may find the pod admitted again under
// its UID since the round began and leave its claims.
TEST_F(DraManagerTest, ReconcileUnpreparesEachPodInsideTheHostsStep) {
  claims_.Set(Claim(kClaimName, kClaimUid, kPodUid));
  claims_.Set(Claim("other", "other-uid", "other-pod"));
  ASSERT_TRUE(manager_->PrepareResources(PodWithClaim(kPodUid, kClaimName)).ok());
  ASSERT_TRUE(manager_->PrepareResources(PodWithClaim("other-pod", "other")).ok());
  std::vector<std::string> stepped;
  ASSERT_TRUE(
      manager_
          ->Reconcile({},
                      [&](const std::string& uid, const std::function<absl::Status()>& unprepare) {
                        stepped.push_back(uid);
                        return uid == kPodUid ? absl::OkStatus() : unprepare();
                      })
          .ok());
  EXPECT_EQ(stepped, (std::vector<std::string>{"other-pod", kPodUid}));
  EXPECT_TRUE(manager_->PodMightNeedToUnprepareResources(kPodUid)) << "admitted again: kept";
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources("other-pod"));
  EXPECT_EQ(driver_->unprepare_calls(), 1);
}

}  // namespace
}  // namespace devmgr::dra
