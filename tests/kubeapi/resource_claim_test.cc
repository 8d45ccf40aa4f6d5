// The ResourceClaim codec's refusals (type errors naming the field) and ValidateResourceClaim,
// the API server's validation of what the allocator relies on (request and subrequest names
// unique in their list).
#include "kubeapi/resource_claim.h"

#include <gtest/gtest.h>

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
       }) {
    ExpectRefused(test);
  }
}

// Validated: decoded (the shape is fine), then refused as the API server refuses it.
void ExpectInvalid(const Case& test) {
  absl::StatusOr<ResourceClaim> claim = DecodeResourceClaim(Json::parse(test.json));
  ASSERT_TRUE(claim.ok()) << claim.status();
  absl::Status valid = ValidateResourceClaim(*claim);
  EXPECT_EQ(valid.code(), absl::StatusCode::kInvalidArgument) << test.json;
  EXPECT_EQ(valid.message(), test.error) << test.json;
}

// Found by the allocator fuzzer: two requests of one name were both allocated, so the name had
// twice its count of results. The API server refuses such a claim. (Decoding alone accepts it:
// two cases of upstream's TestAllocator have one, and the allocator's answer to it is tested.)
TEST(ResourceClaimTest, RefusesRequestsThatShareAName) {
  ExpectInvalid({R"({"spec": {"devices": {"requests": [
                     {"name": "req-0", "exactly": {"deviceClassName": "gpu"}},
                     {"name": "req-1", "exactly": {"deviceClassName": "gpu"}},
                     {"name": "req-1", "exactly": {"deviceClassName": "gpu"}}]}}})",
                 "spec.devices.requests[2].name: Duplicate value: \"req-1\""});
}

TEST(ResourceClaimTest, RefusesSubrequestsThatShareANameInOneRequest) {
  ExpectInvalid({R"({"spec": {"devices": {"requests": [{"name": "req-0", "firstAvailable": [
                     {"name": "big", "deviceClassName": "gpu"},
                     {"name": "big", "deviceClassName": "gpu"}]}]}}})",
                 "spec.devices.requests[0].firstAvailable[1].name: Duplicate value: \"big\""});
}

// Names are unique within their own list only: two requests may each have a subrequest "big".
TEST(ResourceClaimTest, AcceptsTheSameSubrequestNameUnderTwoRequests) {
  absl::StatusOr<ResourceClaim> claim = DecodeResourceClaim(Json::parse(R"({"spec": {"devices": {
      "requests": [
        {"name": "req-0", "firstAvailable": [{"name": "big", "deviceClassName": "gpu"}]},
        {"name": "req-1", "firstAvailable": [{"name": "big", "deviceClassName": "gpu"}]}]}}})"));
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_TRUE(ValidateResourceClaim(*claim).ok());
  ASSERT_EQ(claim->spec.requests.size(), 2u);
  EXPECT_EQ(claim->spec.requests[1].first_available[0].name, "big");
}

}  // namespace
}  // namespace devmgr::kubeapi
