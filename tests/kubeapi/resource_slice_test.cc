// The ResourceSlice codec: the modelled fields read and written, every other field kept at every
// level (so an update never drops what a newer server added), type errors naming the field, and
// upstream's DevicesDeepEqual taint rule.
#include "kubeapi/resource_slice.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace devmgr::kubeapi {
namespace {

// A slice as a v1 API server returns it, with fields devmgr does not model at every level.
constexpr char kServerSlice[] = R"({
  "apiVersion": "resource.k8s.io/v1",
  "kind": "ResourceSlice",
  "metadata": {
    "name": "00000-gpu.example.com-node-1-x7k2p",
    "generateName": "00000-gpu.example.com-node-1-",
    "uid": "5d3c",
    "resourceVersion": "4711",
    "creationTimestamp": "2026-11-25T10:00:00Z",
    "labels": {"team": "ml"},
    "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": "n-1",
                         "controller": true, "blockOwnerDeletion": true}]
  },
  "spec": {
    "driver": "gpu.example.com",
    "pool": {"name": "node-1", "generation": 3, "resourceSliceCount": 2, "futurePoolField": 1},
    "nodeName": "node-1",
    "devices": [{
      "name": "gpu-0",
      "attributes": {"model": {"string": "A100"}, "index": {"int": 0}},
      "capacity": {"memory": {"value": "40Gi"}},
      "taints": [{"key": "maintenance", "effect": "NoSchedule",
                  "timeAdded": "2026-11-25T10:00:00Z", "futureTaintField": "x"}],
      "consumesCounters": [{"counterSet": "gpu-0-counters", "counters": {"memory": {"value": "40Gi"}}}]
    }],
    "skipNodeOperations": ["NodeUnprepareResources"],
    "futureSpecField": [1, 2]
  },
  "status": {"futureStatus": true}
})";

TEST(ResourceSliceTest, ReadsTheModelledFields) {
  absl::StatusOr<ResourceSlice> slice = DecodeResourceSlice(Json::parse(kServerSlice));
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->metadata.name, "00000-gpu.example.com-node-1-x7k2p");
  EXPECT_EQ(slice->metadata.uid, "5d3c");
  EXPECT_EQ(slice->metadata.resource_version, "4711");
  ASSERT_EQ(slice->metadata.owner_references.size(), 1u);
  EXPECT_EQ(slice->metadata.owner_references[0].kind, "Node");
  EXPECT_EQ(slice->metadata.owner_references[0].controller, true);
  EXPECT_EQ(slice->spec.driver, "gpu.example.com");
  EXPECT_EQ(slice->spec.pool.name, "node-1");
  EXPECT_EQ(slice->spec.pool.generation, 3);
  EXPECT_EQ(slice->spec.pool.resource_slice_count, 2);
  EXPECT_EQ(slice->spec.node_name, "node-1");
  EXPECT_EQ(slice->spec.skip_node_operations, std::vector<std::string>{"NodeUnprepareResources"});
  ASSERT_EQ(slice->spec.devices.size(), 1u);
  const Device& device = slice->spec.devices[0];
  EXPECT_EQ(device.name, "gpu-0");
  ASSERT_EQ(device.taints.size(), 1u);
  EXPECT_EQ(device.taints[0].time_added, "2026-11-25T10:00:00Z");
  ASSERT_EQ(device.consumes_counters.size(), 1u);
  EXPECT_EQ(device.consumes_counters[0].counter_set, "gpu-0-counters");
  EXPECT_EQ(device.extra["attributes"]["model"]["string"], "A100");
}

TEST(ResourceSliceTest, WritesBackEveryFieldItDoesNotModel) {
  const Json original = Json::parse(kServerSlice);
  absl::StatusOr<ResourceSlice> slice = DecodeResourceSlice(original);
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(EncodeResourceSlice(*slice), original);

  // A change to a modelled field keeps the rest.
  slice->spec.pool.generation = 4;
  slice->spec.devices[0].taints.clear();
  const Json written = EncodeResourceSlice(*slice);
  EXPECT_EQ(written["spec"]["pool"]["generation"], 4);
  EXPECT_EQ(written["spec"]["pool"]["futurePoolField"], 1);
  EXPECT_FALSE(written["spec"]["devices"][0].contains("taints"));
  EXPECT_EQ(written["spec"]["devices"][0]["capacity"]["memory"]["value"], "40Gi");
  EXPECT_EQ(written["spec"]["futureSpecField"], Json::array({1, 2}));
  EXPECT_EQ(written["status"]["futureStatus"], true);
  EXPECT_EQ(written["metadata"]["labels"]["team"], "ml");
  EXPECT_EQ(written["metadata"]["ownerReferences"][0]["blockOwnerDeletion"], true);
}

TEST(ResourceSliceTest, ANewSliceIsWrittenAsV1) {
  ResourceSlice slice;
  slice.metadata.generate_name = "00000-driver-owner-";
  slice.spec.driver = "driver";
  slice.spec.pool = {"pool", 1, 1, Json::object()};
  const Json written = EncodeResourceSlice(slice);
  EXPECT_EQ(written["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(written["kind"], "ResourceSlice");
  EXPECT_EQ(written["metadata"], Json({{"generateName", "00000-driver-owner-"}}));
  EXPECT_FALSE(written["spec"].contains("devices")) << "an empty list is left out";
  EXPECT_FALSE(written["spec"].contains("nodeName"));
  absl::StatusOr<ResourceSlice> back = DecodeResourceSlice(written);
  ASSERT_TRUE(back.ok()) << back.status();
  back->api_version.clear();
  EXPECT_EQ(*back, slice);
}

// Found by the fuzzer: a slice without apiVersion is read as v1, so that what is written back
// reads as the same value.
TEST(ResourceSliceTest, ASliceWithoutApiVersionIsReadAsV1) {
  absl::StatusOr<ResourceSlice> slice = DecodeResourceSlice(
      Json::parse(R"({"spec": {"deviIes": [], "pool": {"generation7": "x"}}})"));
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->api_version, "resource.k8s.io/v1");
  absl::StatusOr<ResourceSlice> again = DecodeResourceSlice(EncodeResourceSlice(*slice));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *slice);
}

TEST(ResourceSliceTest, WrongTypesNameTheField) {
  struct Case {
    const char* json;
    const char* error;
  };
  for (const Case& test : {
           Case{R"([])", "a ResourceSlice must be an object"},
           Case{R"({"kind": "Pod"})", "kind: is \"Pod\", not ResourceSlice"},
           Case{R"({"metadata": []})", "metadata: must be an object"},
           Case{R"({"metadata": {"name": 7}})", "metadata.name: must be a string"},
           Case{R"({"spec": {"pool": {"generation": "1"}}})",
                "spec.pool.generation: must be an integer"},
           Case{R"({"spec": {"devices": [{"name": "a"}, {"taints": {}}]}})",
                "spec.devices[1].taints: must be a list"},
           Case{R"({"spec": {"allNodes": "yes"}})", "spec.allNodes: must be true or false"},
           Case{R"({"spec": {"skipNodeOperations": ["*", 1]}})",
                "spec.skipNodeOperations[1]: must be a string"},
           Case{R"({"spec": {"sharedCounters": [{"name": "s", "counters": []}]}})",
                "spec.sharedCounters[0].counters: must be an object"},
       }) {
    absl::StatusOr<ResourceSlice> slice = DecodeResourceSlice(Json::parse(test.json));
    EXPECT_EQ(slice.status().code(), absl::StatusCode::kInvalidArgument) << test.json;
    EXPECT_EQ(slice.status().message(), test.error) << test.json;
  }
}

Device TaintedDevice(std::optional<std::string> time_added) {
  Device device;
  device.name = "gpu-0";
  device.taints.push_back({"maintenance", "", "NoSchedule", std::move(time_added), Json::object()});
  return device;
}

// Upstream's deviceTaintEqual: a missing timeAdded equals any, and a second of rounding is
// tolerated; anything else differs.
TEST(ResourceSliceTest, DevicesDeepEqualTreatsTaintTimesAsUpstream) {
  const std::vector<Device> set{TaintedDevice("2026-11-25T10:00:00Z")};
  EXPECT_TRUE(DevicesDeepEqual(set, {TaintedDevice(std::nullopt)}));
  EXPECT_TRUE(DevicesDeepEqual(set, {TaintedDevice("2026-11-25T10:00:00.9Z")}));
  EXPECT_TRUE(DevicesDeepEqual(set, {TaintedDevice("2026-11-25T10:00:01Z")}));
  EXPECT_FALSE(DevicesDeepEqual(set, {TaintedDevice("2026-11-25T10:00:02Z")}));
  Device other_effect = TaintedDevice(std::nullopt);
  other_effect.taints[0].effect = "NoExecute";
  EXPECT_FALSE(DevicesDeepEqual(set, {other_effect}));
  Device other_attributes = TaintedDevice(std::nullopt);
  other_attributes.extra["attributes"] = {{"model", {{"string", "H100"}}}};
  EXPECT_FALSE(DevicesDeepEqual(set, {other_attributes}));
  EXPECT_FALSE(DevicesDeepEqual(set, {}));
  EXPECT_FALSE(DevicesDeepEqual(set, {TaintedDevice(std::nullopt), TaintedDevice(std::nullopt)}));
}

}  // namespace
}  // namespace devmgr::kubeapi
