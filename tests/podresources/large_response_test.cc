// Responses far beyond gRPC's 4 MiB default: a 10 MB List (1,000 pods x 10 containers x 8
// devices) and a node with 100,000 devices, read with our client's raised receive limit; and
// the same List refused by a client that keeps gRPC's default.
#include <gtest/gtest.h>

#include "tests/podresources/server_fixture.h"

namespace devmgr::podresources::testing {
namespace {

class PodResourcesLargeResponseTest : public ServerFixture {};

TEST_F(PodResourcesLargeResponseTest, TenMegabyteList) {
  ServerOptions options;
  options.rate_limit.qps = 0;
  Start(options);
  std::vector<Pod> pods;
  for (int p = 0; p < 1000; ++p) {
    std::vector<std::string> containers;
    for (int c = 0; c < 10; ++c) containers.push_back("container-" + std::to_string(c));
    Pod pod = MakePod("pod-uid-" + std::to_string(p), "pod-" + std::to_string(p), containers);
    for (int c = 0; c < 10; ++c) {
      ResourceDeviceInstances devices;
      for (int d = 0; d < 8; ++d) {
        devices["vendor.example.com/accelerator"]
               ["accelerator-" + std::to_string(p) + "-" + std::to_string(c) + "-" +
                std::to_string(d) +
                "-5f1b2c3d-0000-4000-8000-000000000000-partition-0-000000000000000000000"] = {d %
                                                                                              2};
      }
      node_.devices.SetDevices(pod.uid, containers[static_cast<size_t>(c)], std::move(devices));
    }
    pods.push_back(std::move(pod));
  }
  node_.pods.SetPods(std::move(pods));

  ::v1::ListPodResourcesResponse response;
  ASSERT_TRUE(List(response).ok());
  ASSERT_EQ(response.pod_resources_size(), 1000);
  // The answer goes out in many slices; every pod arrives whole and in order.
  for (int p = 0; p < 1000; ++p) {
    EXPECT_EQ(response.pod_resources(p).name(), "pod-" + std::to_string(p));
    EXPECT_EQ(response.pod_resources(p).containers_size(), 10);
  }
  EXPECT_EQ(response.pod_resources(999).containers(9).devices_size(), 8);
  EXPECT_GT(response.ByteSizeLong(), 10u * 1000 * 1000);

  auto small = ::v1::PodResourcesLister::NewStub(Connect(4 * 1024 * 1024));
  grpc::ClientContext context;
  ::v1::ListPodResourcesResponse refused;
  EXPECT_EQ(small->List(&context, {}, &refused).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST_F(PodResourcesLargeResponseTest, HundredThousandAllocatableDevices) {
  Start();
  ResourceDeviceInstances devices;
  for (int d = 0; d < 100000; ++d) {
    devices["vendor.example.com/vf"]["pci-0000:3b:00.0-virtfn-" + std::to_string(d)] = {d % 4};
  }
  node_.devices.SetAllocatable(std::move(devices));
  ::v1::AllocatableResourcesResponse response;
  ASSERT_TRUE(Allocatable(response).ok());
  EXPECT_EQ(response.devices_size(), 100000);
  EXPECT_GT(response.ByteSizeLong(), 4u * 1024 * 1024);
}

TEST_F(PodResourcesLargeResponseTest, ServerSendLimitIsConfigurable) {
  ServerOptions options;
  options.max_send_message_bytes = 1024 * 1024;
  Start(options);
  ResourceDeviceInstances devices;
  for (int d = 0; d < 100000; ++d)
    devices["vendor.example.com/vf"]["vf-" + std::to_string(d)] = {0};
  node_.devices.SetAllocatable(std::move(devices));
  ::v1::AllocatableResourcesResponse response;
  EXPECT_EQ(Allocatable(response).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

}  // namespace
}  // namespace devmgr::podresources::testing
