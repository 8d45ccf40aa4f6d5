// The ResourceClaim codec's refusals (type errors naming the field) and its defaults.
#include "kubeapi/resource_claim.h"

#include <gtest/gtest.h>

#include "kubeapi/yaml_objects.h"
#include "nlohmann/json.hpp"

namespace devmgr::kubeapi {
namespace {

using Json = nlohmann::json;

struct Case {
  const char* json;
  const char* error;
};

void ExpectRefused(const Case& test) {
  absl::StatusOr<ResourceClaim> claim = DecodeResourceClaim(Json::parse(test.json));
  EXPECT_EQ(claim.status().code(), absl::StatusCode::kInvalidArgument) << test.json;
  EXPECT_EQ(claim.status().message(), test.error) << test.json;
}

// Text that is not UTF-8 is no YAML, as Go's reader says: refused when read, so nothing that
// writes JSON later (the validation measures opaque parameters by writing them) meets it.
// Before, a claim whose parameters held the byte 0xF2 passed the read and the validation threw
// from nlohmann::json::dump (found by allocator_fuzzer).
TEST(ResourceClaimTest, TextThatIsNotUtf8IsRefusedWhenRead) {
  for (const std::string& yaml :
       {std::string("kind: ResourceClaim\nspec: {devices: {config: [{opaque: {driver: d, "
                    "parameters: {a: \"x\xF2y\"}}}]}}\n"),
        std::string("kind: ResourceClaim\nmetadata: {\"n\xF2\": a}\n")}) {
    absl::StatusOr<std::vector<Json>> objects = kubeapi::ReadObjects(yaml);
    ASSERT_FALSE(objects.ok());
    EXPECT_EQ(objects.status().code(), absl::StatusCode::kInvalidArgument) << objects.status();
    EXPECT_NE(objects.status().message().find("not UTF-8"), std::string::npos) << objects.status();
  }
}

TEST(ResourceClaimTest, WrongTypesNameTheField) {
  for (const Case& test : {
           Case{R"([])", "a ResourceClaim must be an object"},
           Case{R"({"kind": "Pod"})", "kind: is \"Pod\", not ResourceClaim"},
           Case{R"({"spec": {"devices": {"requests": {}}}})",
                "spec.devices.requests: must be a list"},
           Case{
               R"({"spec": {"devices": {"requests": [{"name": "a", "exactly": {"count": "1"}}]}}})",
               "spec.devices.requests[0].exactly.count: must be an integer"},
           Case{R"({"status": {"allocation": {"devices": {"results": [{"device": 1}]}}}})",
                "status.allocation.devices.results[0].device: must be a string"},
           // Past int64: refused, as Go's decoder refuses it (it wrapped to -1 before).
           Case{R"({"spec": {"devices": {"requests": [{"name": "a", "exactly": {"count": )"
                R"(18446744073709551615}}]}}})",
                "spec.devices.requests[0].exactly.count: is out of range for an integer"},
       }) {
    ExpectRefused(test);
  }
}

// status.allocation.devices.results[].skipNodeOperations (DRAOptionalNodeOperations) is read and
// written back as the list it is.
TEST(ResourceClaimTest, AResultsSkippedNodeOperationsComeBack) {
  const Json object = Json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
      "metadata": {"name": "c"}, "status": {"allocation": {"devices": {"results": [
      {"request": "r", "driver": "d", "pool": "p", "device": "x",
       "skipNodeOperations": ["NodeUnprepareResources"]}]}}}})");
  absl::StatusOr<ResourceClaim> claim = DecodeResourceClaim(object);
  ASSERT_TRUE(claim.ok()) << claim.status();
  ASSERT_TRUE(claim->allocation.has_value());
  EXPECT_EQ(claim->allocation->results[0].skip_node_operations,
            std::vector<std::string>{"NodeUnprepareResources"});
  EXPECT_EQ(EncodeResourceClaim(*claim), object);
  ExpectRefused({R"({"status": {"allocation": {"devices": {"results": [
      {"skipNodeOperations": "*"}]}}}})",
                 "status.allocation.devices.results[0].skipNodeOperations: must be a list"});
}

// The API server's defaults: ExactCount when no mode is given, and a count of 1 for ExactCount
// when none is given or it is 0 (one value in its types); All keeps what it was given.
TEST(ResourceClaimTest, DefaultsTheModeAndAZeroOrAbsentCount) {
  absl::StatusOr<ResourceClaim> claim = DecodeResourceClaim(Json::parse(R"({"spec": {"devices": {
      "requests": [{"name": "a", "exactly": {"deviceClassName": "c"}},
                   {"name": "b", "exactly": {"deviceClassName": "c", "count": 0}},
                   {"name": "c", "exactly": {"deviceClassName": "c", "count": 3}},
                   {"name": "d", "exactly": {"deviceClassName": "c", "allocationMode": "All"}}]}}})"));
  ASSERT_TRUE(claim.ok()) << claim.status();
  ASSERT_EQ(claim->spec.requests.size(), 4u);
  for (int i : {0, 1}) {
    EXPECT_EQ(claim->spec.requests[i].exactly->allocation_mode, kAllocationModeExactCount);
    EXPECT_EQ(claim->spec.requests[i].exactly->count, 1) << i;
  }
  EXPECT_EQ(claim->spec.requests[2].exactly->count, 3);
  EXPECT_EQ(claim->spec.requests[3].exactly->allocation_mode, kAllocationModeAll);
  EXPECT_EQ(claim->spec.requests[3].exactly->count, 0);
}

// A quantity as Quantity.UnmarshalJSON reads one: a string, spaces around it allowed, or a
// number, whose text is parsed. Before, a fraction was refused, a number past int64 wrapped to
// -1, and spaces were refused.
TEST(ResourceClaimTest, QuantitiesAreReadAsUpstreamReadsThem) {
  absl::StatusOr<ResourceClaim> claim = DecodeResourceClaim(Json::parse(R"({"spec": {"devices": {
      "requests": [{"name": "a", "exactly": {"deviceClassName": "c", "capacity": {"requests": {
        "fraction": 1.5, "whole": 2, "large": 18446744073709551615, "spaced": " 1Gi ",
        "none": null}}}}]}}})"));
  ASSERT_TRUE(claim.ok()) << claim.status();
  const std::map<std::string, Quantity>& requests =
      *claim->spec.requests[0].exactly->capacity_requests;
  EXPECT_EQ(requests.at("fraction").ToString(), "1500m");
  EXPECT_EQ(requests.at("whole").ToString(), "2");
  EXPECT_EQ(requests.at("large").ToString(), "18446744073709551615");
  EXPECT_EQ(requests.at("spaced").ToString(), "1Gi");
  EXPECT_EQ(requests.at("none").ToString(), "0");
}

}  // namespace
}  // namespace devmgr::kubeapi
