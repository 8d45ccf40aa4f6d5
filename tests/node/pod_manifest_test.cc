// Pod manifests as users and `kubectl get pod -o yaml` write them.
#include "node/pod_manifest.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

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

// A pod with two claims, one by name and one from a template, with the claim documents that
// come with it in the same stream (as `kubectl get pod,resourceclaim -o yaml` would give).
constexpr char kPodWithClaims[] = R"(apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: ml, uid: pod-1}
spec:
  schedulingGroup: {podGroupName: trainers}
  resourceClaims:
  - {name: gpus, resourceClaimName: shared-gpus}
  - {name: nic, resourceClaimTemplateName: nic-template}
  initContainers:
  - {name: setup, resources: {claims: [{name: nic}]}}
  containers:
  - name: main
    resources:
      limits: {example.com/fpga: 1}
      claims: [{name: gpus, request: big}, {name: nic}]
status:
  resourceClaimStatuses: [{name: nic, resourceClaimName: trainer-nic-x7k2}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared-gpus, uid: claim-1}
status:
  allocation:
    devices:
      results:
      - {request: big, driver: gpu.example.com, pool: node-a, device: gpu-0}
      - {request: big, driver: gpu.example.com, pool: node-a, device: gpu-1, shareID: s-1}
---
apiVersion: resource.k8s.io/v1beta2
kind: ResourceClaim
metadata:
  name: trainer-nic-x7k2
  namespace: ml
  uid: claim-2
  annotations: {resource.kubernetes.io/pod-claim-name: nic, other.example.com/x: y}
  ownerReferences:
  - {apiVersion: v1, kind: Pod, name: trainer, uid: pod-1, controller: true}
status:
  reservedFor: [{resource: pods, name: trainer, uid: pod-1}]
)";

TEST(PodManifestTest, ReadsResourceClaimsThatComeWithThePod) {
  absl::StatusOr<PodManifest> manifest = ParsePodManifest(kPodWithClaims);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->pod.containers[0].devices,
            (std::map<std::string, int64_t>{{"example.com/fpga", 1}}));

  const dra::Pod& pod = manifest->claims.pod;
  EXPECT_EQ(pod.uid, "pod-1");
  EXPECT_EQ(pod.namespace_name, "ml");
  EXPECT_EQ(pod.name, "trainer");
  EXPECT_EQ(pod.resource_claims,
            (std::vector<dra::PodResourceClaim>{{"gpus", "shared-gpus", std::nullopt},
                                                {"nic", std::nullopt, "nic-template"}}));
  EXPECT_EQ(pod.resource_claim_statuses,
            (std::vector<dra::PodResourceClaimStatus>{{"nic", "trainer-nic-x7k2"}}));
  EXPECT_EQ(pod.pod_group_name, "trainers");
  EXPECT_EQ(pod.init_containers, (std::vector<dra::Container>{{"setup", {{"nic", ""}}, {}}}));
  EXPECT_EQ(pod.containers, (std::vector<dra::Container>{
                                {"main", {{"gpus", "big"}, {"nic", ""}}, {"example.com/fpga"}}}));

  ASSERT_EQ(manifest->claims.claims.size(), 2U);
  const dra::ResourceClaim& gpus = manifest->claims.claims[0];
  EXPECT_EQ(gpus.namespace_name, "ml") << "a claim without a namespace is in the pod's";
  EXPECT_EQ(gpus.name, "shared-gpus");
  EXPECT_EQ(gpus.uid, "claim-1");
  ASSERT_TRUE(gpus.allocation.has_value());
  EXPECT_EQ(*gpus.allocation, (std::vector<dra::DeviceRequestAllocationResult>{
                                  {"big", "gpu.example.com", "node-a", "gpu-0", std::nullopt},
                                  {"big", "gpu.example.com", "node-a", "gpu-1", "s-1"}}));
  EXPECT_TRUE(gpus.reserved_for.empty());
  EXPECT_EQ(gpus.pod_claim_name, std::nullopt);

  const dra::ResourceClaim& nic = manifest->claims.claims[1];
  EXPECT_FALSE(nic.allocation.has_value()) << "no status.allocation: not allocated";
  EXPECT_EQ(nic.pod_claim_name, "nic") << "made from a template, for the pod's claim \"nic\"";
  EXPECT_EQ(nic.owner_references,
            (std::vector<dra::OwnerReference>{{"v1", "Pod", "trainer", "pod-1", true}}));
  EXPECT_EQ(nic.reserved_for,
            (std::vector<dra::ResourceClaimConsumerReference>{{"", "pods", "trainer", "pod-1"}}));
}

// status.extendedResourceClaimStatus: the container resources the scheduler gave to DRA.
TEST(PodManifestTest, ReadsTheResourcesTheSchedulerGaveToDra) {
  absl::StatusOr<PodManifest> manifest = ParsePodManifest(
      "metadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: "
      "{example.com/gpu: 1}}}]}\nstatus:\n  extendedResourceClaimStatus:\n"
      "    resourceClaimName: p-extended-resources-x\n"
      "    requestMappings: [{containerName: c, resourceName: example.com/gpu, "
      "requestName: container-0-request-0}]\n");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->pod.dra_resource_mappings,
            (std::vector<devicemanager::DraResourceMapping>{{"c", "example.com/gpu"}}));
  EXPECT_EQ(manifest->claims.pod.extended_resource_claim_status,
            (dra::PodExtendedResourceClaimStatus{
                {{"c", "example.com/gpu", "container-0-request-0"}}, "p-extended-resources-x"}));
  EXPECT_EQ(manifest->claims.pod.containers[0].requested_resources,
            std::vector<std::string>{"example.com/gpu"});
  EXPECT_FALSE(manifest->claims.empty()) << "the extended-resource claim is a claim of the pod";
}

// Streams with document markers, and an input on which yaml-cpp's own LoadAll never returns
// (found by the fuzzer): it is refused like any malformed YAML.
TEST(PodManifestTest, ReadsDocumentMarkersAndRefusesWhatLoadAllWouldLoopOn) {
  absl::StatusOr<PodManifest> marked = ParsePodManifest(
      "---\nmetadata: {name: p, uid: u}\nspec: {containers: [{name: c}]}\n...\n"
      "--- {apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: a}}\n");
  ASSERT_TRUE(marked.ok()) << marked.status();
  EXPECT_EQ(marked->pod.uid, "u");
  ASSERT_EQ(marked->claims.claims.size(), 1U);
  EXPECT_EQ(marked->claims.claims[0].name, "a");

  absl::StatusOr<PodManifest> looping =
      ParsePodManifest("{mie\":\"d\"},\"sppamg-1g.5gb: 0}\n\"sMetadatae\":{}}}\n");
  EXPECT_EQ(looping.status().code(), absl::StatusCode::kInvalidArgument);
  std::string many_markers;
  for (int i = 0; i < 300; ++i) many_markers += "---\n";
  EXPECT_EQ(ParsePodManifest(many_markers).status().message(),
            "the manifest holds 300 documents, more than 256");
}

// A claim without status.allocation keeps its whole document (its requests) for a node that
// allocates claims itself; an allocated one's results keep admin access, consumed capacity and
// the node operations they skip.
TEST(PodManifestTest, KeepsTheRequestsOfUnallocatedClaimsAndEveryResultField) {
  absl::StatusOr<PodManifest> manifest = ParsePodManifest(
      "metadata: {name: p, namespace: ml}\nspec: {containers: [{name: c}]}\n---\n"
      "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: a, uid: ua}\n"
      "spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com, "
      "count: 2}}]}}\n---\n"
      "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: b, uid: ub}\n"
      "status: {allocation: {devices: {results: [{request: r, driver: d, pool: p, device: x, "
      "shareID: s-1, adminAccess: true, consumedCapacity: {memory: 10Gi}, "
      "skipNodeOperations: [\"*\"]}]}}}\n");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  ASSERT_EQ(manifest->claims.unallocated.size(), 1U);
  const kubeapi::ResourceClaim& unallocated = manifest->claims.unallocated[0];
  EXPECT_EQ(unallocated.metadata.name, "a");
  EXPECT_EQ(unallocated.metadata.namespace_name, "ml") << "in the pod's namespace";
  EXPECT_EQ(unallocated.metadata.uid, "ua");
  ASSERT_EQ(unallocated.spec.requests.size(), 1U);
  ASSERT_TRUE(unallocated.spec.requests[0].exactly.has_value());
  EXPECT_EQ(unallocated.spec.requests[0].exactly->count, 2);

  ASSERT_EQ(manifest->claims.claims.size(), 2U);
  ASSERT_TRUE(manifest->claims.claims[1].allocation.has_value());
  dra::DeviceRequestAllocationResult expected{"r", "d", "p", "x", "s-1", true};
  expected.consumed_capacity = {{"memory", "10Gi"}};
  expected.skip_node_operations = {"*"};
  EXPECT_EQ(*manifest->claims.claims[1].allocation,
            std::vector<dra::DeviceRequestAllocationResult>{expected});

  EXPECT_FALSE(
      ParsePodManifest("metadata: {name: p}\nspec: {containers: [{name: c}]}\n---\n"
                       "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: b}\n"
                       "status: {allocation: {devices: {results: [{request: r, driver: d, pool: p, "
                       "device: x, consumedCapacity: {memory: lots}}]}}}\n")
          .ok());
}

// An unallocated claim's selectors are compiled as the API server compiles a new claim's, with
// the node's features: includes() only with DRAListTypeAttributes on.
TEST(PodManifestTest, AClaimsSelectorsHaveWhatTheNodesFeaturesTurnOn) {
  const std::string text =
      "metadata: {name: p}\nspec: {containers: [{name: c}]}\n---\n"
      "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: a}\n"
      "spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com, "
      "selectors: [{cel: {expression: \"device.attributes['d'].x.includes(1)\"}}]}}]}}\n";
  absl::StatusOr<PodManifest> without = ParsePodManifest(text);
  EXPECT_TRUE(absl::StrContains(without.status().message(),
                                "document 1 (ResourceClaim): spec.devices.requests[0].exactly."
                                "selectors[0].cel.expression: Invalid value: "))
      << without.status();
  EXPECT_TRUE(absl::StrContains(without.status().message(), "undeclared reference to 'includes'"))
      << without.status();
  structured::Features features;
  features.list_type_attributes = true;
  absl::StatusOr<PodManifest> with = ParsePodManifest(text, features);
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(with->claims.unallocated.size(), 1U);
}

// status.allocation.devices.config comes with the claim, the parameters as compact JSON, for
// the driver that prepares it; a configuration that is not the API's is refused with its field.
TEST(PodManifestTest, KeepsTheAllocationConfigOfAnAllocatedClaim) {
  absl::StatusOr<PodManifest> manifest = ParsePodManifest(
      "metadata: {name: p}\nspec: {containers: [{name: c}]}\n---\n"
      "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: b, uid: ub}\n"
      "status:\n  allocation:\n    devices:\n"
      "      results: [{request: r, driver: d.example.com, pool: p, device: x}]\n"
      "      config:\n"
      "      - source: FromClass\n"
      "        opaque: {driver: d.example.com, parameters: {kind: GpuConfig, count: 2}}\n"
      "      - source: FromClaim\n        requests: [r]\n"
      "        opaque:\n          driver: other.example.com\n"
      "          parameters:\n            sharing: {strategy: TimeSlicing}\n");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  ASSERT_EQ(manifest->claims.claims.size(), 1U);
  EXPECT_EQ(
      manifest->claims.claims[0].allocation_config,
      (std::vector<dra::DeviceAllocationConfiguration>{
          {"FromClass", {}, "d.example.com", R"({"count":2,"kind":"GpuConfig"})"},
          {"FromClaim", {"r"}, "other.example.com", R"({"sharing":{"strategy":"TimeSlicing"}})"}}));

  for (const auto& [config, error] : std::vector<std::pair<std::string, std::string>>{
           {"{opaque: {driver: d, parameters: {}}}",
            "status.allocation.devices.config[0].source: is required"},
           {"{source: Elsewhere, opaque: {driver: d, parameters: {}}}",
            "status.allocation.devices.config[0].source: must be FromClass or FromClaim"},
           {"{source: FromClaim}", "status.allocation.devices.config[0].opaque: is required"},
           {"{source: FromClaim, opaque: {parameters: {}}}",
            "status.allocation.devices.config[0].opaque.driver: is required"},
           {"{source: FromClaim, opaque: {driver: d, parameters: [1]}}",
            "status.allocation.devices.config[0].opaque.parameters: must be an object"},
       }) {
    absl::StatusOr<PodManifest> refused = ParsePodManifest(
        absl::StrCat("metadata: {name: p}\nspec: {containers: [{name: c}]}\n---\n"
                     "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: b}\n"
                     "status: {allocation: {devices: {results: [], config: [",
                     config, "]}}}\n"));
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << config;
    EXPECT_TRUE(absl::StrContains(refused.status().message(), error))
        << config << ": " << refused.status();
  }
}

// spec.schedulingGroup.podGroupName names the pod's PodGroup (the Workload API); a group of
// the wrong shape is refused with its field.
TEST(PodManifestTest, ReadsThePodGroupOfThePod) {
  absl::StatusOr<PodManifest> manifest =
      ParsePodManifest("metadata: {name: p}\nspec: {containers: [{name: c}]}\n");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->claims.pod.pod_group_name, std::nullopt);
  for (const auto& [group, error] : std::vector<std::pair<std::string, std::string>>{
           {"[g]", "spec.schedulingGroup: must be an object"},
           {"{podGroupName: [g]}", "spec.schedulingGroup.podGroupName"},
       }) {
    absl::StatusOr<PodManifest> refused = ParsePodManifest(absl::StrCat(
        "metadata: {name: p}\nspec: {containers: [{name: c}], schedulingGroup: ", group, "}\n"));
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << group;
    EXPECT_TRUE(absl::StrContains(refused.status().message(), error))
        << group << ": " << refused.status();
  }
}

TEST(PodManifestTest, APodWithoutClaimsHasAnEmptyDraHalf) {
  absl::StatusOr<PodManifest> manifest = ParsePodManifest(kKubectlStyle);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_TRUE(manifest->claims.empty());
  EXPECT_TRUE(manifest->claims.claims.empty());
}

TEST(PodManifestTest, AClaimWithoutUidGetsOne) {
  absl::StatusOr<PodManifest> manifest = ParsePodManifest(
      "metadata: {name: p}\nspec: {containers: [{name: c}]}\n---\n"
      "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: a}\n---\n");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  ASSERT_EQ(manifest->claims.claims.size(), 1U);
  EXPECT_TRUE(std::regex_match(manifest->claims.claims[0].uid,
                               std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                                          "[0-9a-f]{12}")))
      << manifest->claims.claims[0].uid;
}

// The claim made from a template is named "<pod>-<entry>", which must be a DNS subdomain too
// (upstream's "final ResourceClaim name").
TEST(PodManifestTest, AClaimMadeFromATemplateNeedsANameThatFits) {
  const std::string pod(250, 'p');
  const std::string manifest = absl::StrCat("metadata: {name: ", pod,
                                            "}\nspec:\n  resourceClaims: [{name: gpu, "
                                            "resourceClaimTemplateName: t}]\n  containers: "
                                            "[{name: c}]");
  absl::StatusOr<PodManifest> parsed = ParsePodManifest(manifest);
  ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << parsed.status();
  EXPECT_EQ(parsed.status().message(),
            absl::StrCat("spec.resourceClaims[0].name: Invalid value: \"", pod,
                         "-gpu\": final ResourceClaim name: must be no more than 253 characters"));
  // A claim named in the pod is not made, whatever the pod's name.
  EXPECT_TRUE(ParsePodManifest(absl::StrCat("metadata: {name: ", pod,
                                            "}\nspec:\n  resourceClaims: [{name: gpu, "
                                            "resourceClaimName: c}]\n  containers: [{name: c}]"))
                  .ok());
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
        // Names the API server refuses (ValidatePodName, ValidateNamespaceName,
        // validateContainers); before, any text was admitted, control characters included.
        BadManifest{"PodNameNotASubdomain",
                    "metadata: {name: 'Bad Name!'}\nspec: {containers: [{name: c}]}",
                    "metadata.name: Invalid value: \"Bad Name!\": a lowercase RFC 1123 subdomain "
                    "must consist of lower case alphanumeric characters, '-' or '.'"},
        BadManifest{"NamespaceNotALabel",
                    "metadata: {name: p, namespace: Team}\nspec: {containers: [{name: c}]}",
                    "metadata.namespace: Invalid value: \"Team\": a lowercase RFC 1123 label "
                    "must consist of lower case alphanumeric characters or '-'"},
        BadManifest{"NamespaceWithDots",
                    "metadata: {name: p, namespace: team.a}\nspec: {containers: [{name: c}]}",
                    "metadata.namespace: Invalid value: \"team.a\": must not contain dots"},
        BadManifest{"ContainerNameNotALabel",
                    "metadata: {name: p}\nspec: {containers: [{name: App_1}]}",
                    "spec.containers[0].name: Invalid value: \"App_1\": a lowercase RFC 1123 "
                    "label"},
        BadManifest{"InitContainerNameNotALabel",
                    "metadata: {name: p}\nspec: {initContainers: [{name: \"a\\e[31m\"}], "
                    "containers: [{name: c}]}",
                    // The value quoted as Go's %q quotes it: the escape shown, not obeyed.
                    "spec.initContainers[0].name: Invalid value: \"a\\x1b[31m\": a lowercase "
                    "RFC 1123 label"},
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
        // Resource names the API server refuses (validateContainerResourceName): a pod with one
        // could not exist, and a misspelt device resource was dropped without a word.
        BadManifest{"ResourceWithoutDomain",
                    "metadata: {name: p}\nspec: {containers: [{name: c, resources: "
                    "{limits: {gpu: 1}}}]}",
                    "spec.containers[0].resources.limits[\"gpu\"]: Invalid value: \"gpu\": must "
                    "be a standard resource for containers"},
        BadManifest{"RequestsPrefix",
                    "metadata: {name: p}\nspec: {containers: [{name: c, resources: "
                    "{limits: {requests.example.com/gpu: 1}}}]}",
                    "doesn't follow extended resource name standard"},
        BadManifest{"ResourceNameNotQualified",
                    "metadata: {name: p}\nspec: {containers: [{name: c, resources: "
                    "{requests: {\"example.com/Bad Name\": 1}}}]}",
                    "Invalid value: \"example.com/Bad Name\": name part must consist of"},
        // What kubectl's strict reading refuses and yaml-cpp reads without a word.
        BadManifest{"KeyGivenTwice",
                    "metadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources:\n"
                    "      limits: {example.com/gpu: 1}\n      limits: {example.com/gpu: 3}",
                    "spec.containers[0].resources: key \"limits\" is given twice"},
        BadManifest{"MergeKey",
                    "base: &b {limits: {example.com/gpu: 1}}\nmetadata: {name: p}\nspec:\n"
                    "  containers:\n  - name: c\n    resources: {<<: *b}",
                    "spec.containers[0].resources: merge keys (<<) are not supported"},
        BadManifest{"AliasesThatExpandToBillions",
                    "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, "
                    "*a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, "
                    "*c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                    "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, "
                    "*f, *f, *f, *f]\nmetadata: {name: p}\nspec: {containers: [{name: c}]}",
                    "the documents expand to too many nodes (aliases)"},
        BadManifest{"BadRestartPolicy",
                    "metadata: {name: p}\nspec:\n  initContainers: [{name: i, restartPolicy: "
                    "Never}]\n  containers: [{name: c}]",
                    "spec.initContainers[0].restartPolicy: only \"Always\""},
        BadManifest{"RestartPolicyOnAppContainer",
                    "metadata: {name: p}\nspec: {containers: [{name: c, restartPolicy: Always}]}",
                    "is allowed only on init containers"},
        BadManifest{"ContainersNotAList", "metadata: {name: p}\nspec: {containers: {name: c}}",
                    "spec.containers: must be a list"},
        BadManifest{"ClaimNamesBoth",
                    "metadata: {name: p}\nspec:\n  resourceClaims: [{name: g, resourceClaimName: "
                    "a, resourceClaimTemplateName: t}]\n  containers: [{name: c}]",
                    "spec.resourceClaims[0]: must name exactly one of resourceClaimName and "
                    "resourceClaimTemplateName"},
        BadManifest{"ClaimNamesNeither",
                    "metadata: {name: p}\nspec:\n  resourceClaims: [{name: g}]\n"
                    "  containers: [{name: c}]",
                    "spec.resourceClaims[0]: must name exactly one"},
        BadManifest{"DuplicateClaim",
                    "metadata: {name: p}\nspec:\n  resourceClaims: [{name: g, resourceClaimName: "
                    "a}, {name: g, resourceClaimName: b}]\n  containers: [{name: c}]",
                    "spec.resourceClaims[1].name: duplicate claim name \"g\""},
        BadManifest{"ContainerClaimUnknown",
                    "metadata: {name: p}\nspec: {containers: [{name: c, resources: "
                    "{claims: [{name: nope}]}}]}",
                    "spec.containers[0].resources.claims[0].name: \"nope\" is not one of "
                    "spec.resourceClaims"},
        BadManifest{"TwoPods",
                    "metadata: {name: p}\nspec: {containers: [{name: c}]}\n---\n"
                    "metadata: {name: q}\nspec: {containers: [{name: c}]}",
                    "document 1: the manifest holds one Pod"},
        BadManifest{"OnlyClaims",
                    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: a}",
                    "must be a Pod object"},
        BadManifest{"ClaimApiVersion",
                    "metadata: {name: p}\nspec: {containers: [{name: c}]}\n---\n"
                    "apiVersion: resource.k8s.io/v2\nkind: ResourceClaim\nmetadata: {name: a}",
                    "document 1 (ResourceClaim): apiVersion: \"resource.k8s.io/v2\" is not one of"},
        BadManifest{"ClaimOtherNamespace",
                    "metadata: {name: p}\nspec: {containers: [{name: c}]}\n---\n"
                    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
                    "metadata: {name: a, namespace: other}",
                    "metadata.namespace: is \"other\"; the pod is in \"default\""},
        BadManifest{
            "ClaimTwice",
            "metadata: {name: p}\nspec: {containers: [{name: c}]}\n---\n"
            "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: a}\n"
            "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: a}",
            "document 2 (ResourceClaim): metadata.name: ResourceClaim \"a\" is given twice"},
        // Names the API server refuses (ValidateResourceClaimName, validatePodResourceClaim):
        // a claim "b/c" would share its key "ns/b/c" with a claim "c" of namespace "ns/b".
        BadManifest{"ClaimNameWithASlash",
                    "metadata: {name: p}\nspec: {containers: [{name: c}]}\n---\n"
                    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: b/c}",
                    "document 1 (ResourceClaim): metadata.name: Invalid value: \"b/c\": a "
                    "lowercase RFC 1123 subdomain"},
        BadManifest{"PodClaimEntryName",
                    "metadata: {name: p}\nspec:\n  resourceClaims: [{name: Bad_Name, "
                    "resourceClaimName: a}]\n  containers: [{name: c}]",
                    "spec.resourceClaims[0].name: Invalid value: \"Bad_Name\": a lowercase RFC "
                    "1123 label"},
        BadManifest{"PodClaimReferenceName",
                    "metadata: {name: p}\nspec:\n  resourceClaims: [{name: g, "
                    "resourceClaimTemplateName: ..}]\n  containers: [{name: c}]",
                    "spec.resourceClaims[0].resourceClaimTemplateName: Invalid value: \"..\": a "
                    "lowercase RFC 1123 subdomain"},
        BadManifest{"ClaimRequestsShareAName",
                    "metadata: {name: p}\nspec: {containers: [{name: c}]}\n---\n"
                    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: a}\n"
                    "spec: {devices: {requests: [{name: r, exactly: {deviceClassName: g}}, "
                    "{name: r, exactly: {deviceClassName: g}}]}}",
                    "document 1 (ResourceClaim): spec.devices.requests[1].name: Duplicate value: "
                    "\"r\""},
        BadManifest{"MappingOfUnknownContainer",
                    "metadata: {name: p}\nspec: {containers: [{name: c}]}\nstatus:\n"
                    "  extendedResourceClaimStatus: {resourceClaimName: e, requestMappings: "
                    "[{containerName: x, resourceName: example.com/gpu, requestName: r}]}",
                    "status.extendedResourceClaimStatus.requestMappings: container \"x\" is not "
                    "in the pod"},
        BadManifest{"MappingWithoutRequestName",
                    "metadata: {name: p}\nspec: {containers: [{name: c}]}\nstatus:\n"
                    "  extendedResourceClaimStatus: {resourceClaimName: e, requestMappings: "
                    "[{containerName: c, resourceName: example.com/gpu}]}",
                    "status.extendedResourceClaimStatus.requestMappings[0].requestName: is "
                    "required"},
        BadManifest{"ExtendedStatusWithoutClaimName",
                    "metadata: {name: p}\nspec: {containers: [{name: c}]}\nstatus:\n"
                    "  extendedResourceClaimStatus: {requestMappings: []}",
                    "status.extendedResourceClaimStatus.resourceClaimName: is required"},
        BadManifest{"ResultWithoutDriver",
                    "metadata: {name: p}\nspec: {containers: [{name: c}]}\n---\n"
                    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: a}\n"
                    "status: {allocation: {devices: {results: [{request: r, pool: p, device: "
                    "d}]}}}",
                    "status.allocation.devices.results[0].driver: is required"}),
    [](const ::testing::TestParamInfo<BadManifest>& param_info) { return param_info.param.name; });

// Nesting past what yaml-cpp's parser takes says so, in the words of nesting past devmgr's own
// limit (150 levels); before, yaml-cpp's guard said "bad file".
TEST(PodManifestTest, NestingTooDeepForTheParserSaysSo) {
  for (const int levels : {150, 1000}) {
    const std::string text =
        "metadata: {name: d}\nspec: {containers: [{name: c}]}\nx: " + std::string(levels, '[') +
        std::string(levels, ']') + "\n";
    absl::StatusOr<PodManifest> manifest = ParsePodManifest(text);
    ASSERT_FALSE(manifest.ok()) << levels;
    EXPECT_TRUE(absl::StrContains(manifest.status().message(), "nested deeper than 100 levels"))
        << levels << ": " << manifest.status().message();
  }
}

}  // namespace
}  // namespace devmgr::node
