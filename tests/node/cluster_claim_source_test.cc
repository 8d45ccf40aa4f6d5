// ClusterClaimSource against a fake API server (tests/testlib/fake_api_server.h): a claim read
// from the cluster keeps what the server sent, its configurations' opaque parameters exactly.
#include "node/cluster_claim_source.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/testlib/fake_api_server.h"

namespace devmgr::node {
namespace {

using Json = nlohmann::json;

// A claim allocated one device, its configuration's parameters `parameters` (JSON text).
Json Claim(const std::string& parameters) {
  Json claim = Json::parse(R"({
    "kind": "ResourceClaim", "apiVersion": "resource.k8s.io/v1",
    "metadata": {"name": "gpus", "namespace": "team-a", "uid": "claim-uid"},
    "spec": {"devices": {"requests": [{"name": "gpu",
      "exactly": {"deviceClassName": "gpu.example.com"}}]}},
    "status": {"allocation": {"devices": {
      "results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "worker-1",
                   "device": "gpu-0"}],
      "config": [{"source": "FromClaim", "requests": ["gpu"],
                  "opaque": {"driver": "gpu.example.com", "parameters": {}}}]}}}
  })");
  claim["status"]["allocation"]["devices"]["config"][0]["opaque"]["parameters"] =
      Json::parse(parameters);
  return claim;
}

absl::StatusOr<dra::ResourceClaim> Read(const Json& claim) {
  testing::FakeApiServer server;
  server.AddClaim(claim);
  absl::StatusOr<std::unique_ptr<kubeclient::Client>> client =
      kubeclient::Client::Create(server.Config());
  if (!client.ok()) return client.status();
  ClusterClaimSource source(**client);
  return source.GetClaim("team-a", "gpus");
}

// An integer past int64's range, and parameters nested more deeply than the manifest reader's
// YAML takes, reach the driver as the server sent them. Before, the claim went through YAML
// whole: the integer became a double (1.8446744073709552e+19), and the nesting was refused.
TEST(ClusterClaimSourceTest, OpaqueParametersAreKeptAsTheServerSentThem) {
  absl::StatusOr<dra::ResourceClaim> claim =
      Read(Claim(R"({"mask": 18446744073709551615, "small": -3, "ratio": 0.5, "name": "x"})"));
  ASSERT_TRUE(claim.ok()) << claim.status();
  ASSERT_EQ(claim->allocation_config.size(), 1u);
  EXPECT_EQ(claim->allocation_config[0].parameters,
            R"({"mask":18446744073709551615,"name":"x","ratio":0.5,"small":-3})");
  EXPECT_EQ(claim->allocation_config[0].driver, "gpu.example.com");
  EXPECT_EQ(claim->allocation_config[0].source, "FromClaim");

  std::string deep = "1";
  for (int i = 0; i < 200; ++i) deep = absl::StrCat(R"({"a":)", deep, "}");
  claim = Read(Claim(deep));
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_EQ(claim->allocation_config[0].parameters, deep);
}

// Parameters that are not an object are refused as the manifest reader refuses them.
TEST(ClusterClaimSourceTest, ParametersThatAreNotAnObjectAreRefused) {
  absl::StatusOr<dra::ResourceClaim> claim = Read(Claim(R"("text")"));
  EXPECT_EQ(claim.status().code(), absl::StatusCode::kInvalidArgument) << claim.status();
  EXPECT_EQ(claim.status().message(),
            "ResourceClaim team-a/gpus: status.allocation.devices.config[0].opaque.parameters: "
            "must be an object");
}

}  // namespace
}  // namespace devmgr::node
