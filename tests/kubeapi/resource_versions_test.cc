// The resource.k8s.io versions: v1beta2 is v1's shape; v1beta1 keeps a device's fields under
// `basic` and a request's exact fields on the request.
#include "kubeapi/resource_versions.h"

#include <gtest/gtest.h>

#include "kubeapi/resource_slice.h"

namespace devmgr::kubeapi {
namespace {

using Json = nlohmann::json;

const Json kV1Slice = Json::parse(R"({
  "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
  "spec": {"driver": "gpu.example.com", "pool": {"name": "p", "generation": 1,
    "resourceSliceCount": 1}, "nodeName": "n",
    "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}},
      "capacity": {"memory": {"value": "40Gi"}}, "taints": [{"key": "k", "effect": "NoSchedule"}],
      "newerField": true}]}
})");

TEST(ResourceVersionsTest, NamesTheVersionsInTheOrderAClientTriesThem) {
  EXPECT_EQ(GroupVersion(ResourceVersion::kV1), "resource.k8s.io/v1");
  EXPECT_EQ(GroupVersion(ResourceVersion::kV1beta2), "resource.k8s.io/v1beta2");
  EXPECT_EQ(GroupVersion(ResourceVersion::kV1beta1), "resource.k8s.io/v1beta1");
  EXPECT_EQ(static_cast<int>(ResourceVersion::kV1beta1) + 1, kResourceVersionCount);
}

TEST(ResourceVersionsTest, V1beta1KeepsADevicesFieldsUnderBasic) {
  const Json beta1 = ResourceSliceFromV1(kV1Slice, ResourceVersion::kV1beta1);
  EXPECT_EQ(beta1["apiVersion"], "resource.k8s.io/v1beta1");
  const Json& device = beta1["spec"]["devices"][0];
  EXPECT_EQ(device.size(), 2u) << device.dump();
  EXPECT_EQ(device["name"], "gpu-0");
  EXPECT_EQ(device["basic"]["attributes"]["model"]["string"], "a100");
  EXPECT_EQ(device["basic"]["taints"][0]["key"], "k");
  EXPECT_EQ(device["basic"]["newerField"], true);
  // And back, unchanged.
  EXPECT_EQ(ResourceSliceToV1(beta1, ResourceVersion::kV1beta1), kV1Slice);
}

// A v1beta1 slice from a file (`kubectl get -o yaml` of a cluster serving v1beta1) decodes as the
// v1 slice: its taints and attributes are the device's. Before, `basic` was kept as an unknown
// field: `devmgr dra allocate` gave a tainted device and found no attributes.
TEST(ResourceVersionsTest, AV1beta1SliceDecodesAsItsV1Shape) {
  const Json beta1 = ResourceSliceFromV1(kV1Slice, ResourceVersion::kV1beta1);
  absl::StatusOr<ResourceSlice> decoded = DecodeResourceSlice(beta1);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  absl::StatusOr<ResourceSlice> v1 = DecodeResourceSlice(kV1Slice);
  ASSERT_TRUE(v1.ok()) << v1.status();
  EXPECT_EQ(*decoded, *v1);
  ASSERT_EQ(decoded->spec.devices.size(), 1u);
  ASSERT_EQ(decoded->spec.devices[0].taints.size(), 1u);
  EXPECT_EQ(decoded->spec.devices[0].taints[0].key, "k");
  EXPECT_EQ(VersionOf(beta1), ResourceVersion::kV1beta1);
  EXPECT_EQ(VersionOf(Json::object()), ResourceVersion::kV1);
}

TEST(ResourceVersionsTest, V1beta2IsV1sShape) {
  Json beta2 = ResourceSliceFromV1(kV1Slice, ResourceVersion::kV1beta2);
  EXPECT_EQ(beta2["apiVersion"], "resource.k8s.io/v1beta2");
  EXPECT_EQ(beta2["spec"], kV1Slice["spec"]);
  EXPECT_EQ(ResourceSliceToV1(beta2, ResourceVersion::kV1beta2), kV1Slice);
}

TEST(ResourceVersionsTest, AV1beta1ClaimsExactFieldsMoveUnderExactly) {
  const Json beta1 = Json::parse(R"({
    "apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "c"},
    "spec": {"devices": {"requests": [
      {"name": "gpu", "deviceClassName": "gpu.example.com", "count": 2, "allocationMode":
       "ExactCount", "selectors": [{"cel": {"expression": "true"}}], "adminAccess": false},
      {"name": "nic", "firstAvailable": [{"name": "fast", "deviceClassName": "nic"}]}]}},
    "status": {"allocation": {"devices": {"results": [
      {"request": "gpu", "driver": "d", "pool": "p", "device": "gpu-0"}]}}}
  })");
  const Json v1 = ResourceClaimToV1(beta1, ResourceVersion::kV1beta1);
  EXPECT_EQ(v1["apiVersion"], "resource.k8s.io/v1");
  const Json& gpu = v1["spec"]["devices"]["requests"][0];
  EXPECT_EQ(gpu, Json::parse(R"({"name": "gpu", "exactly": {"deviceClassName":
    "gpu.example.com", "count": 2, "allocationMode": "ExactCount", "selectors": [{"cel":
    {"expression": "true"}}], "adminAccess": false}})"));
  // Subrequests have no exact part.
  EXPECT_EQ(v1["spec"]["devices"]["requests"][1], beta1["spec"]["devices"]["requests"][1]);
  EXPECT_EQ(v1["status"], beta1["status"]);
}

}  // namespace
}  // namespace devmgr::kubeapi
