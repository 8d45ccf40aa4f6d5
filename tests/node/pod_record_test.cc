// The daemon's record of admitted pods: what it writes reads back the same, and anything that
// is not a record of this version is refused with the place named.
#include "node/pod_record.h"

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json_depth.h"
#include "nlohmann/json.hpp"

namespace devmgr::node {
namespace {

using devicemanager::ContainerType;
using devicemanager::Pod;

Pod SamplePod() {
  Pod pod;
  pod.uid = "uid-1";
  pod.namespace_name = "default";
  pod.name = "demo";
  pod.init_containers = {{"setup", ContainerType::kInit, {{"example.com/gpu", 1}}},
                         {"proxy", ContainerType::kSidecar, {}}};
  pod.containers = {{"app", ContainerType::kRegular, {{"example.com/gpu", 2}, {"a.io/x", 0}}}};
  return pod;
}

TEST(PodRecordTest, RoundTrip) {
  Pod other = SamplePod();
  other.uid = "uid-2";
  other.init_containers.clear();
  Pod third = SamplePod();
  third.uid = "uid-3";
  const std::vector<RecordedPod> pods = {
      {SamplePod(), true}, {other, false}, {third, true, /*in_flight=*/true}};
  absl::StatusOr<std::vector<RecordedPod>> decoded = DecodePodRecord(EncodePodRecord(pods));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, pods);
}

// A pod whose resources DRA serves keeps its mappings; pods without them are written as before.
TEST(PodRecordTest, RoundTripsDraResourceMappings) {
  Pod pod = SamplePod();
  pod.dra_resource_mappings = {{"app", "example.com/gpu"}, {"setup", "example.com/gpu"}};
  absl::StatusOr<std::vector<RecordedPod>> decoded = DecodePodRecord(EncodePodRecord({{pod}}));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, std::vector<RecordedPod>{{pod}});
  EXPECT_NE(EncodePodRecordEntry({pod}).find(
                R"("draResourceMappings":[{"container":"app","resource":"example.com/gpu"})"),
            std::string::npos)
      << EncodePodRecordEntry({pod});
  EXPECT_EQ(EncodePodRecordEntry({SamplePod()}).find("draResourceMappings"), std::string::npos);
  EXPECT_EQ(DecodePodRecord(R"({"version":1,"pods":[{"uid":"u","namespace":"n","name":"p",)"
                            R"("initContainers":[],"containers":[],)"
                            R"("draResourceMappings":[{"container":1}]}]})")
                .status()
                .code(),
            absl::StatusCode::kDataLoss);
}

TEST(PodRecordTest, EmptyRecord) {
  absl::StatusOr<std::vector<RecordedPod>> decoded = DecodePodRecord(EncodePodRecord({}));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->empty());
}

// The record joined from kept entries is the document a JSON library writes for the whole
// record, byte for byte, and the example of pod_record.h.
TEST(PodRecordTest, JoinedEntriesAreTheWholeDocument) {
  Pod other = SamplePod();
  other.uid = "uid-2";
  const std::vector<RecordedPod> pods = {{SamplePod()}, {other, true}};
  nlohmann::json list = nlohmann::json::array();
  for (const RecordedPod& pod : pods) {
    list.push_back(nlohmann::json::parse(EncodePodRecordEntry(pod)));
  }
  EXPECT_EQ(EncodePodRecord(pods),
            (nlohmann::json{{"version", 1}, {"pods", std::move(list)}}).dump());
  EXPECT_EQ(EncodePodRecord({}), R"({"pods":[],"version":1})");
  // Only a pod that holds devices, or whose admission or removal is under way, says so:
  // records written before the fields read the same.
  EXPECT_EQ(EncodePodRecordEntry({SamplePod()}),
            R"({"containers":[{"devices":{"a.io/x":0,"example.com/gpu":2},"name":"app",)"
            R"("type":"regular"}],"initContainers":[{"devices":{"example.com/gpu":1},)"
            R"("name":"setup","type":"init"},{"devices":{},"name":"proxy","type":"sidecar"}],)"
            R"("name":"demo","namespace":"default","uid":"uid-1"})");
  EXPECT_NE(EncodePodRecordEntry({SamplePod(), true}).find(R"(,"holdsDevices":true,)"),
            std::string::npos);
  EXPECT_NE(EncodePodRecordEntry({SamplePod(), false, true}).find(R"(,"inFlight":true,)"),
            std::string::npos);
}

// A record of more values than a node's holds is refused before it is parsed (about twenty
// times its size in memory): a hostile 34 MB record took the daemon to 844 MB before it was
// kept aside as corrupt.
TEST(PodRecordTest, ARecordOfTooManyValuesIsRefusedUnparsed) {
  std::string bytes = R"({"version":1,"pods":[],"x":[0)";
  for (size_t i = 0; i < kMaxStateFileJsonValues; ++i) bytes += ",0";
  bytes += "]}";
  const absl::StatusOr<std::vector<RecordedPod>> decoded = DecodePodRecord(bytes);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(absl::StrContains(decoded.status().message(),
                                absl::StrCat("JSON holds more than ", kMaxStateFileJsonValues)))
      << decoded.status();
}

TEST(PodRecordTest, RefusesWhatIsNotARecord) {
  const struct {
    const char* bytes;
    const char* where;
  } cases[] = {
      {"", "not a JSON object"},
      {"[]", "not a JSON object"},
      {R"({"pods":[]})", "version"},
      {R"({"version":0,"pods":[]})", "version"},
      {R"({"version":1})", "record.pods"},
      {R"({"version":1,"pods":[{"namespace":"","name":"","initContainers":[],"containers":[]}]})",
       "pods[0].uid"},
      {R"({"version":1,"pods":[{"uid":"","namespace":"","name":"","initContainers":[],"containers":[]}]})",
       "pods[0].uid: empty"},
      {R"({"version":1,"pods":[{"uid":"a","namespace":"","name":"","initContainers":[],"containers":[]},)"
       R"({"uid":"a","namespace":"","name":"","initContainers":[],"containers":[]}]})",
       "pods[1].uid: empty or repeated"},
      {R"({"version":1,"pods":[{"uid":"a","namespace":"","name":"","initContainers":[],)"
       R"("containers":[{"name":"c","type":"daemon","devices":{}}]}]})",
       "pods[0].containers[0].type"},
      {R"({"version":1,"pods":[{"uid":"a","namespace":"","name":"","initContainers":[],)"
       R"("containers":[{"name":"c","type":"regular","devices":{"x.io/y":-1}}]}]})",
       "pods[0].containers[0].devices[\"x.io/y\"]"},
      {R"({"version":1,"pods":[{"uid":"a","namespace":"","name":"","initContainers":[],)"
       R"("containers":[{"name":"c","type":"regular","devices":{"x.io/y":1.5}}]}]})",
       "not a device count"},
      {R"({"version":1,"pods":[{"uid":"a","namespace":"","name":"","initContainers":[],)"
       R"("containers":[],"holdsDevices":1}]})",
       "pods[0].holdsDevices: not a boolean"},
      {R"({"version":1,"pods":[{"uid":"a","namespace":"","name":"","initContainers":[],)"
       R"("containers":[],"inFlight":"yes"}]})",
       "pods[0].inFlight: not a boolean"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<std::vector<RecordedPod>> decoded = DecodePodRecord(c.bytes);
    ASSERT_FALSE(decoded.ok()) << c.bytes;
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << c.bytes;
    EXPECT_NE(decoded.status().message().find(c.where), std::string::npos)
        << c.bytes << " -> " << decoded.status();
  }
}

}  // namespace
}  // namespace devmgr::node
