// `devmgr dra allocate`, run as a user runs it on the shipped example (examples/allocate): the
// claim printed with its allocation, a second claim that no longer fits (exit 1) and why
// (--explain), unreadable or invalid input (exit 2).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kubeapi/yaml_objects.h"
#include "nlohmann/json.hpp"
#include "tests/cmd/allocate_examples_dir.h"
#include "tests/testlib/subprocess.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::cli {
namespace {

using testing::ProcessResult;
using testing::RunDevmgr;
using testing::TempDir;
using Json = nlohmann::json;

std::string Example(const std::string& name) {
  return (std::filesystem::path(DEVMGR_ALLOCATE_EXAMPLES_DIR) / name).string();
}

std::vector<std::string> Allocate(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {
      "dra", "allocate", "--slices", Example("slices.yaml"), "--classes", Example("classes.yaml")};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(DraAllocateCommandTest, PrintsTheClaimWithItsAllocation) {
  ProcessResult r = RunDevmgr(Allocate({"--claim", Example("claim.yaml"), "-o", "json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json claim = Json::parse(r.out);
  EXPECT_EQ(claim["metadata"]["name"], "training");
  const Json& results = claim["status"]["allocation"]["devices"]["results"];
  ASSERT_EQ(results.size(), 2u) << r.out;
  // Two A100s of 32Gi or more on one NUMA node: gpu-0 (numa 0) has no partner.
  EXPECT_EQ(results[0]["device"], "gpu-1");
  EXPECT_EQ(results[1]["device"], "gpu-3");
  EXPECT_EQ(results[0]["request"], "gpus");
  EXPECT_EQ(claim["status"]["allocation"]["devices"]["config"][0]["source"], "FromClass");
  EXPECT_EQ(claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]
                 ["values"][0],
            "node-1");
  // The spec is printed as it was read.
  EXPECT_EQ(claim["spec"]["devices"]["constraints"][0]["matchAttribute"], "gpu.example.com/numa");
}

// --timeout 0s is no time limit, as the scheduler's filterTimeout of zero disables its timeout;
// before, the search gave up at once: "filter operation aborted: context deadline exceeded".
TEST(DraAllocateCommandTest, AZeroTimeoutIsNoLimit) {
  ProcessResult r =
      RunDevmgr(Allocate({"--claim", Example("claim.yaml"), "--timeout", "0s", "-o", "json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["status"]["allocation"]["devices"]["results"].size(), 2u) << r.out;
}

TEST(DraAllocateCommandTest, YamlReadsBack) {
  ProcessResult r = RunDevmgr(Allocate({"--claim", Example("claim.yaml")}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  absl::StatusOr<std::vector<Json>> objects = kubeapi::ReadObjects(r.out);
  ASSERT_TRUE(objects.ok()) << objects.status() << r.out;
  ASSERT_EQ(objects->size(), 1u);
  EXPECT_EQ((*objects)[0]["status"]["allocation"]["devices"]["results"].size(), 2u);
}

TEST(DraAllocateCommandTest, TakenDevicesLeaveNoAllocationAndExplainSaysWhy) {
  TempDir dir;
  ProcessResult first = RunDevmgr(Allocate({"--claim", Example("claim.yaml")}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  // Another claim, of another name, that holds the devices the first run gave.
  std::string other = first.out;
  const size_t name = other.find("name: training");
  ASSERT_NE(name, std::string::npos) << other;
  other.replace(name, 14, "name: training-0");
  std::ofstream(dir.Sub("allocated.yaml")) << other;

  ProcessResult second = RunDevmgr(Allocate(
      {"--claim", Example("claim.yaml"), "--allocated", dir.Sub("allocated.yaml").string()}));
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_EQ(second.out, "");
  EXPECT_NE(second.err.find("cannot allocate all claims"), std::string::npos) << second.err;

  ProcessResult explained = RunDevmgr(Allocate({"--claim", Example("claim.yaml"), "--allocated",
                                                dir.Sub("allocated.yaml").string(), "--explain"}));
  EXPECT_EQ(explained.exit_code, 1);
  for (const char* line :
       {"request gpus (class gpu.example.com, 2 devices): 1 of 4 devices are candidates",
        "gpu.example.com/node-1/gpu-1: already allocated to another claim",
        "gpu.example.com/node-1/gpu-2: request selector #0 is false"}) {
    EXPECT_NE(explained.err.find(line), std::string::npos) << line << "\n" << explained.err;
  }
}

// --node-label as the kubelet reads its --node-labels: each side trimmed, an empty value a
// label's, and a bad key and value both named in the kubelet's words.
TEST(DraAllocateCommandTest, NodeLabelsAreReadAsTheKubeletReadsThem) {
  ProcessResult good = RunDevmgr(
      Allocate({"--claim", Example("claim.yaml"), "--node-label",
                " topology.kubernetes.io/zone = a ", "--node-label", "example.com/empty="}));
  EXPECT_EQ(good.exit_code, 0) << good.err;
  ProcessResult bad =
      RunDevmgr(Allocate({"--claim", Example("claim.yaml"), "--node-label", "Bad Key=bad value"}));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err.rfind("devmgr: --node-label: invalid node labels: 'Bad Key' - name part must "
                          "consist of alphanumeric characters",
                          0),
            0u)
      << bad.err;
  EXPECT_NE(bad.err.find("; 'bad value' - a valid label must be an empty string or consist of "
                         "alphanumeric characters"),
            std::string::npos)
      << bad.err;
  // Keys of the kubernetes.io and k8s.io namespaces: the kubelet's own, and those under its
  // prefixes, are taken; the others are refused, all named, in the kubelet's words.
  ProcessResult kubelets = RunDevmgr(Allocate(
      {"--claim", Example("claim.yaml"), "--node-label", "kubernetes.io/hostname=n", "--node-label",
       "node.kubernetes.io/pool=a", "--node-label", "x.kubelet.kubernetes.io/y="}));
  EXPECT_EQ(kubelets.exit_code, 0) << kubelets.err;
  ProcessResult reserved =
      RunDevmgr(Allocate({"--claim", Example("claim.yaml"), "--node-label",
                          "node-role.kubernetes.io/worker=", "--node-label", "app.k8s.io/name=x"}));
  EXPECT_EQ(reserved.exit_code, 2);
  EXPECT_EQ(reserved.err.rfind("devmgr: --node-label: unknown 'kubernetes.io' or 'k8s.io' labels "
                               "specified with --node-labels: [app.k8s.io/name "
                               "node-role.kubernetes.io/worker]\n--node-labels in the "
                               "'kubernetes.io' namespace must begin with an allowed prefix "
                               "(kubelet.kubernetes.io, node.kubernetes.io) or be in the "
                               "specifically allowed set (beta.kubernetes.io/arch, ",
                               0),
            0u)
      << reserved.err;
}

TEST(DraAllocateCommandTest, BadInputExitsTwo) {
  TempDir dir;
  std::ofstream(dir.Sub("broken.yaml")) << "kind: ResourceClaim\nspec: [\n";
  ProcessResult broken = RunDevmgr(Allocate({"--claim", dir.Sub("broken.yaml").string()}));
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.err.find("broken.yaml: document 1: not valid YAML"), std::string::npos)
      << broken.err;

  // A key given twice, which kubectl's strict reading refuses, and yaml-cpp read as the first.
  std::ofstream(dir.Sub("dup.yaml"))
      << "kind: ResourceClaim\nmetadata: {name: a}\nmetadata: {name: b}\n";
  ProcessResult dup = RunDevmgr(Allocate({"--claim", dir.Sub("dup.yaml").string()}));
  EXPECT_EQ(dup.exit_code, 2);
  EXPECT_NE(dup.err.find("dup.yaml: document 1: the document: key \"metadata\" is given twice"),
            std::string::npos)
      << dup.err;

  std::ofstream(dir.Sub("bad-cel.yaml")) << R"(kind: ResourceClaim
metadata: {name: c}
spec:
  devices:
    requests:
    - name: r
      exactly:
        deviceClassName: gpu.example.com
        selectors: [{cel: {expression: "device.attributes.nope("}}]
)";
  ProcessResult bad_cel = RunDevmgr(Allocate({"--claim", dir.Sub("bad-cel.yaml").string()}));
  EXPECT_EQ(bad_cel.exit_code, 2);
  // Refused as the API server refuses it, before any allocation.
  EXPECT_NE(bad_cel.err.find("spec.devices.requests[0].exactly.selectors[0].cel.expression: "
                             "Invalid value: \"device.attributes.nope(\": compilation failed: "),
            std::string::npos)
      << bad_cel.err;

  // The same claim given twice took two devices; the same slices twice made their pools look
  // incomplete ("cannot allocate all claims").
  ProcessResult claim_twice =
      RunDevmgr(Allocate({"--claim", Example("claim.yaml"), "--allocated", Example("claim.yaml")}));
  EXPECT_EQ(claim_twice.exit_code, 2);
  EXPECT_NE(claim_twice.err.find("ResourceClaim \"default/training\" is given twice"),
            std::string::npos)
      << claim_twice.err;
  ProcessResult slices_twice =
      RunDevmgr(Allocate({"--claim", Example("claim.yaml"), "--slices", Example("slices.yaml")}));
  EXPECT_EQ(slices_twice.exit_code, 2);
  EXPECT_NE(slices_twice.err.find("ResourceSlice \""), std::string::npos) << slices_twice.err;
  EXPECT_NE(slices_twice.err.find("\" is given twice"), std::string::npos) << slices_twice.err;

  std::ofstream(dir.Sub("twice.yaml")) << R"(kind: ResourceClaim
metadata: {name: c}
spec:
  devices:
    requests:
    - {name: r, exactly: {deviceClassName: gpu.example.com}}
    - {name: r, exactly: {deviceClassName: gpu.example.com}}
)";
  ProcessResult twice = RunDevmgr(Allocate({"--claim", dir.Sub("twice.yaml").string()}));
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("spec.devices.requests[1].name: Duplicate value: \"r\""),
            std::string::npos)
      << twice.err;

  // A selector the API server would refuse as too costly to evaluate: every pair of attributes.
  std::ofstream(dir.Sub("costly.yaml")) << R"(kind: ResourceClaim
metadata: {name: c}
spec:
  devices:
    requests:
    - name: r
      exactly:
        deviceClassName: gpu.example.com
        selectors:
        - cel: {expression: "device.driver == 'gpu.example.com'"}
        - cel:
            expression: >-
              device.attributes.all(d, device.attributes[d].all(k, device.attributes.all(e,
              device.attributes[e].all(l, string(device.attributes[d][k]) !=
              string(device.attributes[e][l])))))
)";
  ProcessResult costly = RunDevmgr(Allocate({"--claim", dir.Sub("costly.yaml").string()}));
  EXPECT_EQ(costly.exit_code, 2);
  EXPECT_NE(costly.err.find("ResourceClaim c: spec.devices.requests[0].exactly.selectors[1].cel."
                            "expression: Forbidden: too complex, exceeds cost limit"),
            std::string::npos)
      << costly.err;

  ProcessResult gates = RunDevmgr(
      Allocate({"--claim", Example("claim.yaml"), "--feature-gates", "DRANoSuchThing=true"}));
  EXPECT_EQ(gates.exit_code, 2);
  EXPECT_NE(gates.err.find("--feature-gates"), std::string::npos) << gates.err;
}

// A claim's selectors are compiled as the API server compiles a new claim's: with only what the
// gates turn on. Before, both were taken whatever the gates said, as a stored claim's are.
TEST(DraAllocateCommandTest, ASelectorHasOnlyWhatTheGatesTurnOn) {
  TempDir dir;
  const auto claim_with = [&](const std::string& name, const std::string& expression) {
    std::ofstream(dir.Sub(name)) << R"(kind: ResourceClaim
metadata: {name: c}
spec:
  devices:
    requests:
    - name: r
      exactly:
        deviceClassName: gpu.example.com
        selectors: [{cel: {expression: ")"
                                 << expression << "\"}}]\n";
    return dir.Sub(name).string();
  };
  const std::string multiple =
      claim_with("multiple.yaml", "device.allowMultipleAllocations == false");
  ProcessResult on = RunDevmgr(Allocate({"--claim", multiple, "-o", "json"}));
  EXPECT_EQ(on.exit_code, 0) << on.err;
  ProcessResult off =
      RunDevmgr(Allocate({"--claim", multiple, "--feature-gates", "DRAConsumableCapacity=false"}));
  EXPECT_EQ(off.exit_code, 2);
  EXPECT_NE(off.err.find("cel.expression: Invalid value: \"device.allowMultipleAllocations == "
                         "false\": compilation failed: ERROR: <input>:1:7: undefined field "
                         "'allowMultipleAllocations'"),
            std::string::npos)
      << off.err;

  const std::string includes =
      claim_with("includes.yaml", "device.attributes['gpu.example.com'].model.includes('x')");
  ProcessResult without = RunDevmgr(Allocate({"--claim", includes}));
  EXPECT_EQ(without.exit_code, 2);
  EXPECT_NE(without.err.find("undeclared reference to 'includes'"), std::string::npos)
      << without.err;
  ProcessResult with =
      RunDevmgr(Allocate({"--claim", includes, "--feature-gates", "DRAListTypeAttributes=true"}));
  EXPECT_EQ(with.err.find("undeclared reference"), std::string::npos) << with.err;
}

}  // namespace
}  // namespace devmgr::cli
