// Pod manifests as users and `kubectl get pod -o yaml` write them.
#include "node/pod_manifest.h"

#include <gtest/gtest.h>

#include <regex>

namespace devmgr::node {
namespace {

using devicemanager::Container;
using devicemanager::ContainerType;

constexpr char kKubectlStyle[] = R"(apiVersion: v1
kind: Pod
metadata:
  name: trainer
  namespace: ml
  uid: 0f4c1a52-7d2e-4b8e-9a53-1c2d3e4f5a6b
  labels: {app: trainer}
spec:
  initContainers:
  - name: fetch
    image: busybox
    resources:
      limits: {example.com/gpu: "1"}
  - name: proxy
    image: envoy
    restartPolicy: Always
    resources:
      limits:
        example.com/nic: 2
        cpu: 500m
  containers:
  - name: main
    image: trainer:1
    resources:
      requests: {example.com/gpu: 2, memory: 1Gi}
      limits: {example.com/gpu: "2000m", memory: 2Gi, nvidia.com/mig-1g.5gb: 0}
  - name: logger
    image: fluent
status:
  phase: Running
)";

TEST(PodManifestTest, ReadsWhatKubectlPrints) {
  absl::StatusOr<PodManifest> manifest = ParsePodManifest(kKubectlStyle);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_FALSE(manifest->generated_uid);
  const devicemanager::Pod& pod = manifest->pod;
  EXPECT_EQ(pod.uid, "0f4c1a52-7d2e-4b8e-9a53-1c2d3e4f5a6b");
  EXPECT_EQ(pod.name, "trainer");
  EXPECT_EQ(pod.namespace_name, "ml");
  ASSERT_EQ(pod.init_containers.size(), 2U);
  EXPECT_EQ(pod.init_containers[0],
            (Container{"fetch", ContainerType::kInit, {{"example.com/gpu", 1}}}));
  EXPECT_EQ(pod.init_containers[1],
            (Container{"proxy", ContainerType::kSidecar, {{"example.com/nic", 2}}}));
  ASSERT_EQ(pod.containers.size(), 2U);
  EXPECT_EQ(pod.containers[0], (Container{"main",
                                          ContainerType::kRegular,
                                          {{"example.com/gpu", 2}, {"nvidia.com/mig-1g.5gb", 0}}}));
  EXPECT_EQ(pod.containers[1], (Container{"logger", ContainerType::kRegular, {}}));
}

TEST(PodManifestTest, ReadsJsonAndFillsDefaults) {
  absl::StatusOr<PodManifest> manifest =
      ParsePodManifest(R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":)"
                       R"({"limits":{"a.io/x":"3"}}}]}})");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_TRUE(manifest->generated_uid);
  EXPECT_TRUE(std::regex_match(
      manifest->pod.uid,
      std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << manifest->pod.uid;
  EXPECT_EQ(manifest->pod.namespace_name, "default");
  EXPECT_EQ(manifest->pod.containers[0].devices.at("a.io/x"), 3);
  EXPECT_NE(ParsePodManifest(R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}]}})")
                ->pod.uid,
            manifest->pod.uid);
}

struct BadManifest {
  const char* name;
  const char* text;
  const char* says;
};

class BadManifestTest : public ::testing::TestWithParam<BadManifest> {};

TEST_P(BadManifestTest, IsRefusedNamingTheField) {
  absl::StatusOr<PodManifest> manifest = ParsePodManifest(GetParam().text);
  ASSERT_FALSE(manifest.ok());
  EXPECT_EQ(manifest.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(manifest.status().message().find(GetParam().says), absl::string_view::npos)
      << manifest.status();
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, BadManifestTest,
    ::testing::Values(
        BadManifest{"NotYaml", "metadata: [unclosed", "not valid YAML or JSON"},
        BadManifest{"NotAnObject", "- a\n- b", "must be a Pod object"},
        BadManifest{"WrongKind", "kind: Deployment\nmetadata: {name: d}\nspec: {}",
                    "kind: is \"Deployment\""},
        BadManifest{"NoName", "metadata: {uid: u}\nspec: {containers: [{name: c}]}",
                    "metadata.name: is required"},
        BadManifest{"NoContainers", "metadata: {name: p}\nspec: {}",
                    "spec.containers: is required"},
        BadManifest{"ContainerWithoutName", "metadata: {name: p}\nspec: {containers: [{image: x}]}",
                    "spec.containers[0].name: is required"},
        BadManifest{"DuplicateNames",
                    "metadata: {name: p}\nspec:\n  initContainers: [{name: c}]\n"
                    "  containers: [{name: c}]",
                    "spec.containers[0].name: duplicate container name \"c\""},
        BadManifest{"Fractional",
                    "metadata: {name: p}\nspec: {containers: [{name: c, resources: "
                    "{limits: {example.com/gpu: 1.5}}}]}",
                    "spec.containers[0].resources.limits[\"example.com/gpu\"]: quantity \"1.5\" "
                    "is not a whole number of devices"},
        BadManifest{"Negative",
                    "metadata: {name: p}\nspec: {containers: [{name: c, resources: "
                    "{limits: {example.com/gpu: -1}}}]}",
                    "quantity \"-1\" is negative"},
        BadManifest{"RequestWithoutLimit",
                    "metadata: {name: p}\nspec: {containers: [{name: c, resources: "
                    "{requests: {example.com/gpu: 1}}}]}",
                    "requests[\"example.com/gpu\"]: a limit must be set"},
        BadManifest{"RequestDiffersFromLimit",
                    "metadata: {name: p}\nspec: {containers: [{name: c, resources: "
                    "{requests: {example.com/gpu: 1}, limits: {example.com/gpu: 2}}}]}",
                    "must equal the limit (2)"},
        BadManifest{"BadRestartPolicy",
                    "metadata: {name: p}\nspec:\n  initContainers: [{name: i, restartPolicy: "
                    "Never}]\n  containers: [{name: c}]",
                    "spec.initContainers[0].restartPolicy: only \"Always\""},
        BadManifest{"RestartPolicyOnAppContainer",
                    "metadata: {name: p}\nspec: {containers: [{name: c, restartPolicy: Always}]}",
                    "is allowed only on init containers"},
        BadManifest{"ContainersNotAList", "metadata: {name: p}\nspec: {containers: {name: c}}",
                    "spec.containers: must be a list"}),
    [](const ::testing::TestParamInfo<BadManifest>& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace devmgr::node
