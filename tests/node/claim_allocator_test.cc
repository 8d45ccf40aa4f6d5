// The node's own allocator (no scheduler): a claim that comes with a pod unallocated gets devices
// from the slices in the node's local store and the DeviceClasses of its classes file or folder;
// devices other claims hold are taken, a claim the node holds keeps what it has, admin access
// holds nothing, and when no allocation exists the error says why and nothing changes.
#include "node/claim_allocator.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kubeapi/resource_slice.h"
#include "resourceslice/memory_store.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::node {
namespace {

using ::devmgr::testing::TempDir;
using Json = nlohmann::json;

constexpr char kDriver[] = "gpu.example.com";

// A slice of kDriver's pool "node" on node "node" with devices dev-0 .. dev-(count-1), each with
// its index as attribute "index".
kubeapi::ResourceSlice Slice(int count) {
  Json devices = Json::array();
  for (int i = 0; i < count; ++i) {
    devices.push_back(
        {{"name", absl::StrCat("dev-", i)}, {"attributes", {{"index", {{"int", i}}}}}});
  }
  const Json object = {{"apiVersion", "resource.k8s.io/v1"},
                       {"kind", "ResourceSlice"},
                       {"metadata", {{"name", "node-gpu"}}},
                       {"spec",
                        {{"driver", kDriver},
                         {"nodeName", "node"},
                         {"pool", {{"name", "node"}, {"generation", 1}, {"resourceSliceCount", 1}}},
                         {"devices", devices}}}};
  absl::StatusOr<kubeapi::ResourceSlice> slice = kubeapi::DecodeResourceSlice(object);
  EXPECT_TRUE(slice.ok()) << slice.status();
  return slice.value_or(kubeapi::ResourceSlice{});
}

// A claim "default/NAME" (uid "uid-NAME") asking for `count` devices of class kDriver, with
// `selector` as CEL when not empty; `admin` asks for admin access.
kubeapi::ResourceClaim Request(const std::string& name, int count, const std::string& selector = "",
                               bool admin = false) {
  Json exactly = {{"deviceClassName", kDriver}, {"count", count}};
  if (!selector.empty()) exactly["selectors"] = {{{"cel", {{"expression", selector}}}}};
  if (admin) exactly["adminAccess"] = true;
  const Json object = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}}},
      {"spec", {{"devices", {{"requests", {{{"name", "gpu"}, {"exactly", exactly}}}}}}}}};
  absl::StatusOr<kubeapi::ResourceClaim> claim = kubeapi::DecodeResourceClaim(object);
  EXPECT_TRUE(claim.ok()) << claim.status();
  return claim.value_or(kubeapi::ResourceClaim{});
}

// The node's record of claim "default/NAME" holding `devices` of kDriver.
dra::ResourceClaim Held(const std::string& name, const std::vector<std::string>& devices,
                        bool admin = false) {
  dra::ResourceClaim claim{"default", name, "uid-" + name, {}, {}, {}, {}};
  claim.allocation.emplace();
  for (const std::string& device : devices) {
    claim.allocation->push_back({"gpu", kDriver, "node", device, std::nullopt, admin});
  }
  return claim;
}

// A pod bringing `requests`, all unallocated.
PodClaims Brought(const std::vector<kubeapi::ResourceClaim>& requests) {
  PodClaims claims;
  claims.pod.uid = "pod-1";
  claims.pod.namespace_name = "default";
  claims.pod.name = "pod";
  for (const kubeapi::ResourceClaim& request : requests) {
    claims.claims.push_back(
        {"default", request.metadata.name, request.metadata.uid, {}, {}, {}, {}});
    claims.unallocated.push_back(request);
  }
  return claims;
}

// The devices `claims` holds for claim `name`, in order.
std::vector<std::string> Devices(const PodClaims& claims, const std::string& name) {
  std::vector<std::string> devices;
  for (const dra::ResourceClaim& claim : claims.claims) {
    if (claim.name != name || !claim.allocation.has_value()) continue;
    for (const dra::DeviceRequestAllocationResult& result : *claim.allocation) {
      EXPECT_EQ(result.driver, kDriver);
      EXPECT_EQ(result.pool, "node");
      devices.push_back(result.device);
    }
  }
  return devices;
}

class ClaimAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteClass("gpu.yaml", kDriver, absl::StrCat("device.driver == \"", kDriver, "\""));
    store_.Put(Slice(3));
  }

  void WriteClass(const std::string& file, const std::string& name, const std::string& selector) {
    std::ofstream(dir_.Sub(file)) << "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\n"
                                  << "metadata: {name: " << name << "}\n"
                                  << "spec: {selectors: [{cel: {expression: '" << selector
                                  << "'}}]}\n";
  }

  ClaimAllocator Allocator(ClaimAllocatorOptions options = {}) {
    options.node_name = "node";
    if (options.device_classes.empty()) options.device_classes = dir_.path();
    return ClaimAllocator(std::move(options), store_);
  }

  TempDir dir_;
  resourceslice::MemoryStore store_;
};

TEST_F(ClaimAllocatorTest, AllocatesFromTheLocalSlicesInSliceOrder) {
  PodClaims claims = Brought({Request("a", 2)});
  ASSERT_TRUE(Allocator().Allocate(claims, {}).ok());
  EXPECT_EQ(Devices(claims, "a"), (std::vector<std::string>{"dev-0", "dev-1"}));
  ASSERT_TRUE(claims.claims[0].allocation.has_value());
  EXPECT_EQ((*claims.claims[0].allocation)[0].request, "gpu");
}

TEST_F(ClaimAllocatorTest, RequestSelectorsAreAndedWithTheClasses) {
  PodClaims claims = Brought({Request("a", 1, "device.attributes[\"gpu.example.com\"].index > 1")});
  ASSERT_TRUE(Allocator().Allocate(claims, {}).ok());
  EXPECT_EQ(Devices(claims, "a"), std::vector<std::string>{"dev-2"});
}

TEST_F(ClaimAllocatorTest, DevicesOtherClaimsHoldAreTaken) {
  PodClaims claims = Brought({Request("a", 1), Request("b", 1)});
  ASSERT_TRUE(Allocator().Allocate(claims, {Held("other", {"dev-0"})}).ok());
  EXPECT_EQ(Devices(claims, "a"), std::vector<std::string>{"dev-1"});
  EXPECT_EQ(Devices(claims, "b"), std::vector<std::string>{"dev-2"});
}

TEST_F(ClaimAllocatorTest, AClaimTheNodeHoldsKeepsItsAllocation) {
  // Another pod brought "a" first and got dev-2: this pod shares it.
  PodClaims claims = Brought({Request("a", 1)});
  ASSERT_TRUE(Allocator().Allocate(claims, {Held("a", {"dev-2"})}).ok());
  EXPECT_EQ(Devices(claims, "a"), std::vector<std::string>{"dev-2"});

  // A claim of the same name with another UID is another claim: its devices are taken.
  dra::ResourceClaim old = Held("a", {"dev-0"});
  old.uid = "uid-old";
  PodClaims renewed = Brought({Request("a", 1)});
  ASSERT_TRUE(Allocator().Allocate(renewed, {old}).ok());
  EXPECT_EQ(Devices(renewed, "a"), std::vector<std::string>{"dev-1"});
}

// The allocation's configuration (the class's, then the claim's) comes with the claim, for the
// driver that prepares it, and stays with a claim the node holds.
TEST_F(ClaimAllocatorTest, TheAllocationsConfigurationComesWithTheClaim) {
  std::ofstream(dir_.Sub("gpu.yaml"))
      << "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: " << kDriver
      << "}\nspec:\n  selectors: [{cel: {expression: 'device.driver == \"" << kDriver
      << "\"'}}]\n  config: [{opaque: {driver: " << kDriver << ", parameters: {from: class}}}]\n";
  kubeapi::ResourceClaim request = Request("a", 1);
  request.spec.config.push_back(
      {{"gpu"}, {{"opaque", {{"driver", kDriver}, {"parameters", {{"from", "claim"}}}}}}});
  PodClaims claims = Brought({request});
  ASSERT_TRUE(Allocator().Allocate(claims, {}).ok());
  const std::vector<dra::DeviceAllocationConfiguration> want = {
      {"FromClass", {}, kDriver, R"({"from":"class"})"},
      // Naming every request of the claim is naming none (upstream's allocator clears it).
      {"FromClaim", {}, kDriver, R"({"from":"claim"})"}};
  EXPECT_EQ(claims.claims[0].allocation_config, want);

  PodClaims again = Brought({request});
  ASSERT_TRUE(Allocator().Allocate(again, {claims.claims[0]}).ok());
  EXPECT_EQ(again.claims[0].allocation_config, want);
}

TEST_F(ClaimAllocatorTest, AdminAccessHoldsNothing) {
  ClaimAllocatorOptions options;
  options.features.admin_access = true;
  PodClaims claims = Brought({Request("a", 3)});
  ASSERT_TRUE(Allocator(options).Allocate(claims, {Held("monitor", {"dev-0"}, true)}).ok());
  EXPECT_EQ(Devices(claims, "a"), (std::vector<std::string>{"dev-0", "dev-1", "dev-2"}));
}

TEST_F(ClaimAllocatorTest, NoAllocationSaysWhyAndChangesNothing) {
  PodClaims claims = Brought({Request("a", 2)});
  const PodClaims before = claims;
  const absl::Status status = Allocator().Allocate(claims, {Held("other", {"dev-0", "dev-1"})});
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_TRUE(absl::StartsWith(status.message(), "cannot allocate all claims: ")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(),
                                "claim default/a request gpu: 1 of 3 devices are candidates "
                                "(wants 2 devices), 2 already allocated to another claim"))
      << status;
  EXPECT_EQ(claims.claims, before.claims);
}

TEST_F(ClaimAllocatorTest, AnUnknownClassIsAnErrorOfTheClaim) {
  kubeapi::ResourceClaim claim = Request("a", 1);
  claim.spec.requests[0].exactly->device_class_name = "nic.example.com";
  PodClaims claims = Brought({claim});
  const absl::Status status = Allocator().Allocate(claims, {});
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(absl::StrContains(status.message(), "nic.example.com")) << status;
  EXPECT_FALSE(claims.claims[0].allocation.has_value());
}

TEST_F(ClaimAllocatorTest, TheClassesAreReadAtEachAllocation) {
  ClaimAllocator allocator = Allocator();
  kubeapi::ResourceClaim claim = Request("a", 1);
  claim.spec.requests[0].exactly->device_class_name = "last.example.com";
  PodClaims claims = Brought({claim});
  EXPECT_FALSE(allocator.Allocate(claims, {}).ok());

  WriteClass("last.json", "last.example.com", "device.attributes[\"gpu.example.com\"].index == 2");
  ASSERT_TRUE(allocator.Allocate(claims, {}).ok());
  EXPECT_EQ(Devices(claims, "a"), std::vector<std::string>{"dev-2"});
}

TEST_F(ClaimAllocatorTest, AClassesFileThatCannotBeReadIsAnError) {
  ClaimAllocatorOptions options;
  options.device_classes = dir_.Sub("missing.yaml");
  PodClaims claims = Brought({Request("a", 1)});
  const absl::Status status = Allocator(options).Allocate(claims, {});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "missing.yaml")) << status;
}

TEST_F(ClaimAllocatorTest, AllocatedClaimsAreLeftAlone) {
  PodClaims claims = Brought({});
  claims.claims.push_back(Held("kept", {"dev-1"}));
  ASSERT_TRUE(Allocator().Allocate(claims, {}).ok());
  EXPECT_EQ(Devices(claims, "kept"), std::vector<std::string>{"dev-1"});
}

// A claim of the same pod that came allocated holds its devices: the pod's other claims do not
// get them. Before, only the claims the node held counted, and "new" got dev-0 too.
TEST_F(ClaimAllocatorTest, TheDevicesOfTheSamePodsAllocatedClaimsAreTaken) {
  PodClaims claims = Brought({Request("new", 1)});
  claims.claims.push_back(Held("kept", {"dev-0"}));
  ASSERT_TRUE(Allocator().Allocate(claims, {}).ok());
  EXPECT_EQ(Devices(claims, "new"), std::vector<std::string>{"dev-1"});
  EXPECT_EQ(Devices(claims, "kept"), std::vector<std::string>{"dev-0"});
}

// The gates default to a current cluster's: a device its driver tainted NoSchedule (how a
// driver says a device is broken) is not allocated. Before, taints were off by default and the
// node gave out the broken device.
TEST_F(ClaimAllocatorTest, ADeviceTaintedNoScheduleIsNotAllocatedByDefault) {
  kubeapi::ResourceSlice slice = Slice(2);
  slice.spec.devices[0].taints.push_back({"example.com/broken", "", "NoSchedule", std::nullopt});
  store_.Put(slice);
  PodClaims claims = Brought({Request("a", 1)});
  ASSERT_TRUE(Allocator().Allocate(claims, {}).ok());
  EXPECT_EQ(Devices(claims, "a"), std::vector<std::string>{"dev-1"});
}

}  // namespace
}  // namespace devmgr::node
