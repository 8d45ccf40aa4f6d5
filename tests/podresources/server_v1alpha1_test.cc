// v1alpha1.PodResourcesLister: ports upstream's server_v1alpha1_test.go (TestListPodResources).
#include <gtest/gtest.h>

#include "tests/podresources/server_fixture.h"

namespace devmgr::podresources::testing {
namespace {

class PodResourcesServerV1alpha1Test : public ServerFixture {};

TEST_F(PodResourcesServerV1alpha1Test, TestListPodResources) {
  Start();
  struct Case {
    std::string desc;
    bool with_pod;
    ResourceDeviceInstances devices;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"no pods", false, {}, ""},
      {"pod without devices",
       true,
       {},
       R"pb(pod_resources {
              name: "pod-name"
              namespace: "pod-namespace"
              containers { name: "container-name" }
            })pb"},
      {"pod with devices",
       true,
       {{"resource", {{"dev0", {1}}, {"dev1", {}}}}},
       R"pb(pod_resources {
              name: "pod-name"
              namespace: "pod-namespace"
              containers {
                name: "container-name"
                devices { resource_name: "resource" device_ids: "dev0" }
                devices { resource_name: "resource" device_ids: "dev1" }
              }
            })pb"},
  };
  for (const Case& test_case : cases) {
    SCOPED_TRACE(test_case.desc);
    std::vector<Pod> pods;
    if (test_case.with_pod) pods.push_back(MakePod("pod-uid", "pod-name", {"container-name"}));
    node_.pods.SetPods(pods);
    node_.devices.SetDevices("pod-uid", "container-name", test_case.devices);
    ::v1alpha1::ListPodResourcesResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(v1alpha1_->List(&context, {}, &response).ok());
    EXPECT_TRUE(
        ProtoEquals(ParseText<::v1alpha1::ListPodResourcesResponse>(test_case.expected), response));
  }
}

// List reads its request itself, as v1's methods do: one that does not parse is refused with
// INTERNAL, the code a Go kubelet's gRPC gives, before the rate limit and the counters.
TEST_F(PodResourcesServerV1alpha1Test, ListRefusesAMalformedRequest) {
  Start();
  const RawAnswer answer = RawCall(channel_, "/v1alpha1.PodResourcesLister/List", "\xff");
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::INTERNAL)
      << answer.status.error_message();
  EXPECT_EQ(server_->counters().v1alpha1.requests_total.load(), 0u);
}

// v1alpha1 lists every pod the host knows (GetPods), terminal ones included, and only regular
// containers, as upstream does.
TEST_F(PodResourcesServerV1alpha1Test, ListsAllPodsAndRegularContainersOnly) {
  Start();
  Pod pod = MakePod("uid-1", "running", {"app"});
  pod.init_containers.push_back({"sidecar", "Always"});
  node_.pods.SetPods({pod, MakePod("uid-2", "finished", {"job"})},
                     std::vector<std::string>{"uid-1"});
  ::v1alpha1::ListPodResourcesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(v1alpha1_->List(&context, {}, &response).ok());
  ASSERT_EQ(response.pod_resources_size(), 2);
  ASSERT_EQ(response.pod_resources(0).containers_size(), 1);
  EXPECT_EQ(response.pod_resources(0).containers(0).name(), "app");
  EXPECT_EQ(server_->counters().v1alpha1.requests_total.load(), 1u);
}

}  // namespace
}  // namespace devmgr::podresources::testing
