// v1.PodResourcesLister through a real server on a unix socket, fed by fake providers. Ports
// upstream's pkg/kubelet/apis/podresources/server_v1_test.go by test name. Where upstream's mocks
// return ContainerDevices directly, ours return device instances, and the expectations show
// what a real kubelet sends for them: one entry per (device, NUMA node).
#include "podresources/server_v1.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/podresources/server_fixture.h"

namespace devmgr::podresources::testing {
namespace {

class PodResourcesServerV1Test : public ServerFixture {
 protected:
  const std::string kPodUid = "pod-uid";
  const std::string kContainer = "container-name";

  // The fixtures of upstream's table tests.
  void SetCpusAndMemory() {
    node_.cpus.SetCpus(kPodUid, kContainer, {12, 23, 30});
    node_.memory.SetMemory(kPodUid, kContainer, Memory());
  }
  static std::vector<::v1::ContainerMemory> Memory() {
    return {ParseText<::v1::ContainerMemory>(R"pb(memory_type: "memory"
                                                  size: 1073741824
                                                  topology { nodes { ID: 1 } })pb"),
            ParseText<::v1::ContainerMemory>(R"pb(memory_type: "hugepages-1Gi"
                                                  size: 1073741824
                                                  topology { nodes { ID: 1 } })pb")};
  }
  static std::vector<::v1::DynamicResource> DraDevices() {
    return {ParseText<::v1::DynamicResource>(R"pb(
      claim_name: "claim-name"
      claim_namespace: "default"
      claim_resources {
        cdi_devices { name: "dra-dev0" }
        cdi_devices { name: "dra-dev1" }
        driver_name: "dra.example.com"
        pool_name: "worker-1-pool"
        device_name: "gpu-1"
      })pb")};
  }
  static constexpr char kContainerMemoryText[] = R"pb(
    cpu_ids: [ 12, 23, 30 ]
    memory {
      memory_type: "memory"
      size: 1073741824
      topology { nodes { ID: 1 } }
    }
    memory {
      memory_type: "hugepages-1Gi"
      size: 1073741824
      topology { nodes { ID: 1 } }
    })pb";
  static constexpr char kDevicesText[] = R"pb(
    devices {
      resource_name: "resource"
      device_ids: "dev0"
      topology { nodes { ID: 1 } }
    }
    devices {
      resource_name: "resource"
      device_ids: "dev1"
      topology { nodes { ID: 1 } }
    })pb";
  static constexpr char kDraText[] = R"pb(
    dynamic_resources {
      claim_name: "claim-name"
      claim_namespace: "default"
      claim_resources {
        cdi_devices { name: "dra-dev0" }
        cdi_devices { name: "dra-dev1" }
        driver_name: "dra.example.com"
        pool_name: "worker-1-pool"
        device_name: "gpu-1"
      }
    })pb";

  // StartQuiet serves from `providers` with the Watch hub's periodic resync off and its first
  // read done, so that only List reads the providers afterwards.
  void StartQuiet(const Providers& providers) {
    ServerOptions options;
    options.watch.resync_period = absl::ZeroDuration();
    Start(options, providers);
    server_->hub_for_test().Drain();
  }

  void ResetProviders() {
    node_.pods.SetPods({});
    node_.devices.SetDevices(kPodUid, kContainer, {});
    node_.cpus.SetCpus(kPodUid, kContainer, {});
    node_.cpus.SetPodCpus(kPodUid, {});
    node_.memory.SetMemory(kPodUid, kContainer, {});
    node_.memory.SetPodMemory(kPodUid, {});
    node_.dynamic_resources.SetDynamicResources(kPodUid, kContainer, {});
  }
};

TEST_F(PodResourcesServerV1Test, TestListPodResourcesV1) {
  Start();
  const std::string pod_header =
      R"pb(pod_resources { name: "pod-name" namespace: "pod-namespace")pb";
  struct Case {
    std::string desc;
    std::function<void()> setup;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"no pods", [] {}, ""},
      {"pod without devices",
       [&] { node_.pods.SetPods({MakePod(kPodUid, "pod-name", {kContainer})}); },
       pod_header + "containers { name: \"container-name\" } }"},
      {"pod with devices",
       [&] {
         node_.pods.SetPods({MakePod(kPodUid, "pod-name", {kContainer})});
         node_.devices.SetDevices(kPodUid, kContainer,
                                  {{"resource", {{"dev0", {1}}, {"dev1", {1}}}}});
         SetCpusAndMemory();
       },
       pod_header + "containers { name: \"container-name\" " + kDevicesText + kContainerMemoryText +
           "} }"},
      {"pod-level resources enabled and container with exclusive CPU and Memory",
       [&] {
         node_.pods.SetPods({MakePod(kPodUid, "pod-name", {kContainer})});
         SetCpusAndMemory();
         node_.cpus.SetPodCpus(kPodUid, {12, 23, 30, 31, 32});
         node_.memory.SetPodMemory(kPodUid, {ParseText<::v1::ContainerMemory>(
                                                R"pb(memory_type: "memory"
                                                     size: 2147483648
                                                     topology { nodes { ID: 1 } })pb")});
       },
       pod_header + R"pb(cpu_ids: [ 12, 23, 30, 31, 32 ]
                         memory {
                           memory_type: "memory"
                           size: 2147483648
                           topology { nodes { ID: 1 } }
                         }
                         containers { name: "container-name")pb" +
           kContainerMemoryText + "} }"},
      {"pod with dynamic resources",
       [&] {
         node_.pods.SetPods({MakePod(kPodUid, "pod-name", {kContainer})});
         SetCpusAndMemory();
         node_.dynamic_resources.SetDynamicResources(kPodUid, kContainer, DraDevices());
       },
       pod_header + "containers { name: \"container-name\" " + kContainerMemoryText + kDraText +
           "} }"},
      {"pod with dynamic resources and devices",
       [&] {
         node_.pods.SetPods({MakePod(kPodUid, "pod-name", {kContainer})});
         node_.devices.SetDevices(kPodUid, kContainer,
                                  {{"resource", {{"dev0", {1}}, {"dev1", {1}}}}});
         SetCpusAndMemory();
         node_.dynamic_resources.SetDynamicResources(kPodUid, kContainer, DraDevices());
       },
       pod_header + "containers { name: \"container-name\" " + kDevicesText + kContainerMemoryText +
           kDraText + "} }"},
  };
  for (const Case& test_case : cases) {
    SCOPED_TRACE(test_case.desc);
    ResetProviders();
    test_case.setup();
    ::v1::ListPodResourcesResponse response;
    ASSERT_TRUE(List(response).ok());
    EXPECT_TRUE(
        ProtoEquals(ParseText<::v1::ListPodResourcesResponse>(test_case.expected), response));
  }
}

TEST_F(PodResourcesServerV1Test, TestListPodResourcesUsesOnlyActivePodsV1) {
  Start();
  auto make_pod = [](int i) {
    return MakePod("pod-uid-" + std::to_string(i), "pod-name-" + std::to_string(i),
                   {"container-name-" + std::to_string(i)});
  };
  struct Case {
    std::string desc;
    std::vector<int> pods;
    std::vector<int> active;
  };
  const std::vector<Case> cases = {
      {"no pods", {}, {}},
      {"no differences", {1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}},
      {"some terminated pods", {1, 2, 3, 4, 5, 6, 7}, {1, 3, 4, 5, 6}},
  };
  for (const Case& test_case : cases) {
    SCOPED_TRACE(test_case.desc);
    std::vector<Pod> pods;
    std::vector<std::string> active_uids;
    std::vector<std::string> expected;
    for (int i : test_case.pods) pods.push_back(make_pod(i));
    for (int i : test_case.active) {
      active_uids.push_back("pod-uid-" + std::to_string(i));
      expected.push_back("pod-namespace/pod-name-" + std::to_string(i));
      node_.devices.SetDevices("pod-uid-" + std::to_string(i),
                               "container-name-" + std::to_string(i),
                               {{"resource", {{"dev0", {1}}}}});
    }
    node_.pods.SetPods(pods, active_uids);
    ::v1::ListPodResourcesResponse response;
    ASSERT_TRUE(List(response).ok());
    std::vector<std::string> listed;
    for (const auto& pod : response.pod_resources()) {
      listed.push_back(pod.namespace_() + "/" + pod.name());
      ASSERT_EQ(pod.containers_size(), 1);
      EXPECT_EQ(pod.containers(0).devices_size(), 1);
    }
    std::sort(listed.begin(), listed.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(listed, expected);
  }
}

TEST_F(PodResourcesServerV1Test, TestListPodResourcesWithInitContainersV1) {
  Start();
  const std::string init = "init-container-name";
  struct Case {
    std::string desc;
    std::string restart_policy;
    bool init_has_devices;
    std::string expected_containers;
  };
  const std::vector<Case> cases = {
      {"pod having an init container", "", false,
       "containers { name: \"container-name\" " + std::string(kContainerMemoryText) + "}"},
      {"pod having a restartable init container", "Always", false,
       "containers { name: \"init-container-name\" " + std::string(kContainerMemoryText) +
           "} containers { name: \"container-name\" " + kContainerMemoryText + "}"},
      {"pod having an init container with SRIOV devices", "", true,
       "containers { name: \"container-name\" " + std::string(kContainerMemoryText) + "}"},
      {"pod having a restartable init container with SRIOV devices", "Always", true,
       "containers { name: \"init-container-name\" " + std::string(kDevicesText) +
           kContainerMemoryText + "} containers { name: \"container-name\" " +
           kContainerMemoryText + "}"},
  };
  for (const Case& test_case : cases) {
    SCOPED_TRACE(test_case.desc);
    ResetProviders();
    Pod pod = MakePod(kPodUid, "pod-name", {kContainer});
    pod.init_containers.push_back({init, test_case.restart_policy});
    node_.pods.SetPods({pod});
    SetCpusAndMemory();
    node_.cpus.SetCpus(kPodUid, init, {12, 23, 30});
    node_.memory.SetMemory(kPodUid, init, Memory());
    node_.devices.SetDevices(
        kPodUid, init,
        test_case.init_has_devices
            ? ResourceDeviceInstances{{"resource", {{"dev0", {1}}, {"dev1", {1}}}}}
            : ResourceDeviceInstances{});
    ::v1::ListPodResourcesResponse response;
    ASSERT_TRUE(List(response).ok());
    EXPECT_TRUE(
        ProtoEquals(ParseText<::v1::ListPodResourcesResponse>(
                        R"pb(pod_resources { name: "pod-name" namespace: "pod-namespace")pb" +
                        test_case.expected_containers + "}"),
                    response));
  }
}

TEST_F(PodResourcesServerV1Test, TestAllocatableResources) {
  Start();
  struct Case {
    std::string desc;
    ResourceDeviceInstances devices;
    std::vector<int64_t> cpus;
    std::vector<::v1::ContainerMemory> memory;
    std::string expected;
  };
  const ResourceDeviceInstances all_devices = {
      {"resource", {{"dev0", {0}}, {"dev1", {1}}}},
      {"resource-mm", {{"devMM", {0, 1}}}},  // one device on two NUMA nodes: two entries
      {"resource-nt", {{"devA", {}}}},       // no topology
      {"resource-nt-mm", {{"devM0", {}}, {"devMM", {}}}},
  };
  const std::string devices_text = R"pb(
    devices {
      resource_name: "resource"
      device_ids: "dev0"
      topology { nodes { ID: 0 } }
    }
    devices {
      resource_name: "resource"
      device_ids: "dev1"
      topology { nodes { ID: 1 } }
    }
    devices {
      resource_name: "resource-mm"
      device_ids: "devMM"
      topology { nodes { ID: 0 } }
    }
    devices {
      resource_name: "resource-mm"
      device_ids: "devMM"
      topology { nodes { ID: 1 } }
    }
    devices { resource_name: "resource-nt" device_ids: "devA" }
    devices { resource_name: "resource-nt-mm" device_ids: "devM0" }
    devices { resource_name: "resource-nt-mm" device_ids: "devMM" })pb";
  const std::vector<int64_t> all_cpus = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const std::string cpus_text = "cpu_ids: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]";
  const std::vector<::v1::ContainerMemory> all_memory = {
      ParseText<::v1::ContainerMemory>(R"pb(memory_type: "memory"
                                            size: 5368709120
                                            topology { nodes { ID: 0 } })pb"),
      ParseText<::v1::ContainerMemory>(R"pb(memory_type: "hugepages-2Mi"
                                            size: 1073741824
                                            topology { nodes { ID: 0 } })pb"),
      ParseText<::v1::ContainerMemory>(R"pb(memory_type: "memory"
                                            size: 5368709120
                                            topology { nodes { ID: 1 } })pb"),
      ParseText<::v1::ContainerMemory>(R"pb(memory_type: "hugepages-2Mi"
                                            size: 1073741824
                                            topology { nodes { ID: 1 } })pb")};
  const std::string memory_text = R"pb(
    memory {
      memory_type: "memory"
      size: 5368709120
      topology { nodes { ID: 0 } }
    }
    memory {
      memory_type: "hugepages-2Mi"
      size: 1073741824
      topology { nodes { ID: 0 } }
    }
    memory {
      memory_type: "memory"
      size: 5368709120
      topology { nodes { ID: 1 } }
    }
    memory {
      memory_type: "hugepages-2Mi"
      size: 1073741824
      topology { nodes { ID: 1 } }
    })pb";
  const std::vector<Case> cases = {
      {"no devices, no CPUs", {}, {}, {}, ""},
      {"no devices, all CPUs", {}, all_cpus, {}, cpus_text},
      {"no devices, no CPUs, all memory", {}, {}, all_memory, memory_text},
      {"with devices, all CPUs", all_devices, all_cpus, {}, cpus_text + devices_text},
      {"with devices, no CPUs", all_devices, {}, {}, devices_text},
  };
  // Built whole (a provider without revisions, as upstream), then from the parts kept per
  // resource (AllocatableCache).
  for (const bool revisions : {false, true}) {
    node_.devices.ReportAllocatableRevisions(revisions);
    for (const Case& test_case : cases) {
      SCOPED_TRACE(test_case.desc + (revisions ? ", parts kept" : ", built whole"));
      node_.devices.SetAllocatable(test_case.devices);
      node_.cpus.SetAllocatable(test_case.cpus);
      node_.memory.SetAllocatable(test_case.memory);
      ::v1::AllocatableResourcesResponse response;
      ASSERT_TRUE(Allocatable(response).ok());
      EXPECT_TRUE(
          ProtoEquals(ParseText<::v1::AllocatableResourcesResponse>(test_case.expected), response));
    }
  }
}

// Beyond upstream (AllocatableCache): each resource's part of the answer is kept, serialized,
// until that resource's revision changes; only the resources that changed are read again.
TEST_F(PodResourcesServerV1Test, GetAllocatableResourcesReadsOnlyTheResourcesThatChanged) {
  node_.devices.SetAllocatable({{"a", {{"dev0", {0}}}}, {"b", {{"dev1", {}}, {"dev2", {1}}}}});
  StartQuiet(node_.pods_and_devices());
  ::v1::AllocatableResourcesResponse first;
  ASSERT_TRUE(Allocatable(first).ok());
  EXPECT_EQ(node_.devices.resource_allocatable_calls(), 2);
  ::v1::AllocatableResourcesResponse again;
  ASSERT_TRUE(Allocatable(again).ok());
  EXPECT_EQ(node_.devices.resource_allocatable_calls(), 2) << "nothing read again";
  EXPECT_TRUE(ProtoEquals(first, again));

  // b's devices change (dev2 unhealthy): only b is read, and the answer keeps the order.
  node_.devices.SetAllocatable({{"a", {{"dev0", {0}}}}, {"b", {{"dev1", {}}}}});
  ::v1::AllocatableResourcesResponse changed;
  ASSERT_TRUE(Allocatable(changed).ok());
  EXPECT_EQ(node_.devices.resource_allocatable_calls(), 3);
  EXPECT_TRUE(ProtoEquals(ParseText<::v1::AllocatableResourcesResponse>(R"pb(
                            devices {
                              resource_name: "a"
                              device_ids: "dev0"
                              topology { nodes { ID: 0 } }
                            }
                            devices { resource_name: "b" device_ids: "dev1" })pb"),
                          changed));

  // A resource added before the others, and one gone.
  node_.devices.SetAllocatable({{"0", {{"x", {}}}}, {"b", {{"dev1", {}}}}});
  ::v1::AllocatableResourcesResponse moved;
  ASSERT_TRUE(Allocatable(moved).ok());
  EXPECT_EQ(node_.devices.resource_allocatable_calls(), 4) << "only the new resource";
  EXPECT_TRUE(ProtoEquals(ParseText<::v1::AllocatableResourcesResponse>(R"pb(
                            devices { resource_name: "0" device_ids: "x" }
                            devices { resource_name: "b" device_ids: "dev1" })pb"),
                          moved));
}

// The answer joined from kept parts, CPUs and memory is, byte for byte, what protobuf writes for
// the same message, whether built whole or from parts.
TEST_F(PodResourcesServerV1Test, GetAllocatableResourcesAnswersProtobufsBytes) {
  node_.devices.SetAllocatable({{"a", {{"dev0", {0, 1}}}}, {"b", {{"dev1", {}}}}});
  node_.cpus.SetAllocatable({3, 1, 2});
  node_.memory.SetAllocatable(
      {ParseText<::v1::ContainerMemory>(R"pb(memory_type: "memory"
                                             size: 1024
                                             topology { nodes { ID: 0 } })pb")});
  Start();
  const auto expected = ParseText<::v1::AllocatableResourcesResponse>(R"pb(
    devices {
      resource_name: "a"
      device_ids: "dev0"
      topology { nodes { ID: 0 } }
    }
    devices {
      resource_name: "a"
      device_ids: "dev0"
      topology { nodes { ID: 1 } }
    }
    devices { resource_name: "b" device_ids: "dev1" }
    cpu_ids: [ 3, 1, 2 ]
    memory {
      memory_type: "memory"
      size: 1024
      topology { nodes { ID: 0 } }
    })pb");
  for (const bool revisions : {true, false}) {
    node_.devices.ReportAllocatableRevisions(revisions);
    for (int call = 0; call < 2; ++call) {  // built, then kept
      const RawAnswer answer =
          RawCall(channel_, "/v1.PodResourcesLister/GetAllocatableResources", "");
      ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
      EXPECT_EQ(answer.bytes, expected.SerializeAsString())
          << (revisions ? "parts kept" : "built whole") << ", call " << call;
    }
  }
}

TEST_F(PodResourcesServerV1Test, TestGetPodResourcesV1) {
  Start();
  ::v1::GetPodResourcesResponse missing;
  const grpc::Status not_found = Get("pod-namespace", "pod-name", missing);
  EXPECT_EQ(not_found.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(not_found.error_message(), "pod pod-name in namespace pod-namespace not found");

  node_.pods.SetPods({MakePod(kPodUid, "pod-name", {kContainer})});
  {
    SCOPED_TRACE("pod without devices");
    ::v1::GetPodResourcesResponse response;
    ASSERT_TRUE(Get("pod-namespace", "pod-name", response).ok());
    EXPECT_TRUE(ProtoEquals(ParseText<::v1::GetPodResourcesResponse>(R"pb(
                              pod_resources {
                                name: "pod-name"
                                namespace: "pod-namespace"
                                containers { name: "container-name" }
                              })pb"),
                            response));
  }
  {
    SCOPED_TRACE("pod with devices");
    node_.devices.SetDevices(kPodUid, kContainer, {{"resource", {{"dev0", {1}}, {"dev1", {1}}}}});
    SetCpusAndMemory();
    node_.dynamic_resources.SetDynamicResources(kPodUid, kContainer, DraDevices());
    ::v1::GetPodResourcesResponse response;
    ASSERT_TRUE(Get("pod-namespace", "pod-name", response).ok());
    EXPECT_TRUE(
        ProtoEquals(ParseText<::v1::GetPodResourcesResponse>(
                        R"pb(pod_resources { name: "pod-name" namespace: "pod-namespace"
                                             containers { name: "container-name")pb" +
                        std::string(kDevicesText) + kContainerMemoryText + kDraText + "} }"),
                    response));
  }
  {
    SCOPED_TRACE("pod-level resources enabled and container with shared CPU pool");
    ResetProviders();
    node_.pods.SetPods({MakePod(kPodUid, "pod-name", {kContainer})});
    node_.cpus.SetPodCpus(kPodUid, {12, 23, 30, 31, 32});
    ::v1::GetPodResourcesResponse response;
    ASSERT_TRUE(Get("pod-namespace", "pod-name", response).ok());
    EXPECT_TRUE(ProtoEquals(ParseText<::v1::GetPodResourcesResponse>(R"pb(
                              pod_resources {
                                name: "pod-name"
                                namespace: "pod-namespace"
                                cpu_ids: [ 12, 23, 30, 31, 32 ]
                                containers { name: "container-name" }
                              })pb"),
                            response));
  }
  EXPECT_EQ(server_->counters().v1.requests_get.load(), 4u);
  EXPECT_EQ(server_->counters().v1.errors_get.load(), 1u);
}

TEST_F(PodResourcesServerV1Test, TestGetPodResourcesWithInitContainersV1) {
  Start();
  Pod pod = MakePod(kPodUid, "pod-name", {kContainer});
  pod.init_containers.push_back({"init-container-name", ""});
  pod.init_containers.push_back({"sidecar", "Always"});
  node_.pods.SetPods({pod});
  node_.devices.SetDevices(kPodUid, "init-container-name", {{"resource", {{"dev9", {0}}}}});
  node_.devices.SetDevices(kPodUid, "sidecar", {{"resource", {{"dev0", {1}}}}});
  ::v1::GetPodResourcesResponse response;
  ASSERT_TRUE(Get("pod-namespace", "pod-name", response).ok());
  EXPECT_TRUE(ProtoEquals(ParseText<::v1::GetPodResourcesResponse>(R"pb(
                            pod_resources {
                              name: "pod-name"
                              namespace: "pod-namespace"
                              containers {
                                name: "sidecar"
                                devices {
                                  resource_name: "resource"
                                  device_ids: "dev0"
                                  topology { nodes { ID: 1 } }
                                }
                              }
                              containers { name: "container-name" }
                            })pb"),
                          response));
}

TEST_F(PodResourcesServerV1Test, GetDisabledReturnsUpstreamError) {
  ServerOptions options;
  options.get_enabled = false;
  Start(options);
  node_.pods.SetPods({MakePod(kPodUid, "pod-name", {kContainer})});
  ::v1::GetPodResourcesResponse response;
  const grpc::Status status = Get("pod-namespace", "pod-name", response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(status.error_message(), kGetDisabledMessage);
  EXPECT_EQ(server_->counters().v1.errors_get.load(), 1u);
}

TEST_F(PodResourcesServerV1Test, ListTriggersGarbageCollectionOfFreedDevices) {
  Start();
  const int before = node_.devices.update_calls();
  ::v1::ListPodResourcesResponse response;
  ASSERT_TRUE(List(response).ok());
  EXPECT_EQ(node_.devices.update_calls(), before + 1);
  ::v1::AllocatableResourcesResponse allocatable;
  ASSERT_TRUE(Allocatable(allocatable).ok());
  EXPECT_EQ(node_.devices.update_calls(), before + 1);  // only List collects
  EXPECT_EQ(server_->counters().v1.requests_list.load(), 1u);
  EXPECT_EQ(server_->counters().v1.requests_get_allocatable.load(), 1u);
  EXPECT_EQ(server_->counters().v1.requests_total.load(), 2u);
}

// Beyond upstream (ListCache): with providers that report revisions and no other resource
// managers, an unchanged node's List is the kept answer; every change is seen at once.
TEST_F(PodResourcesServerV1Test, ListSendsTheKeptAnswerWhileNothingChanged) {
  node_.pods.SetPods({MakePod("pod-a", "pod-a", {"c"})});
  node_.devices.SetDevices("pod-a", "c", {{"resource", {{"dev0", {1}}}}});
  StartQuiet(node_.pods_and_devices());
  const int hub_reads = node_.devices.get_devices_calls();

  ::v1::ListPodResourcesResponse first;
  ASSERT_TRUE(List(first).ok());
  const int reads = node_.devices.get_devices_calls();
  const int collections = node_.devices.update_calls();
  EXPECT_EQ(reads, hub_reads + 1);
  ::v1::ListPodResourcesResponse again;
  ASSERT_TRUE(List(again).ok());
  EXPECT_TRUE(ProtoEquals(first, again));
  EXPECT_EQ(node_.devices.get_devices_calls(), reads);       // not read again
  EXPECT_EQ(node_.devices.update_calls(), collections + 1);  // but collected, as every List

  // A device change is seen by the next List.
  node_.devices.SetDevices("pod-a", "c", {{"resource", {{"dev1", {0}}}}});
  ::v1::ListPodResourcesResponse changed;
  ASSERT_TRUE(List(changed).ok());
  EXPECT_TRUE(ProtoEquals(ParseText<::v1::ListPodResourcesResponse>(R"pb(
                            pod_resources {
                              name: "pod-a"
                              namespace: "pod-namespace"
                              containers {
                                name: "c"
                                devices {
                                  resource_name: "resource"
                                  device_ids: "dev1"
                                  topology { nodes { ID: 0 } }
                                }
                              }
                            })pb"),
                          changed));

  // So is a pod change.
  node_.pods.Upsert(MakePod("pod-b", "pod-b", {"d"}));
  ::v1::ListPodResourcesResponse added;
  ASSERT_TRUE(List(added).ok());
  ASSERT_EQ(added.pod_resources_size(), 2);
  EXPECT_EQ(added.pod_resources(1).name(), "pod-b");
  node_.pods.Remove("pod-a");
  ::v1::ListPodResourcesResponse removed;
  ASSERT_TRUE(List(removed).ok());
  ASSERT_EQ(removed.pod_resources_size(), 1);
  EXPECT_EQ(removed.pod_resources(0).name(), "pod-b");
}

// Pods pod-a (container c, dev0) and `other` (container d, dev1), listed once; then pod-a's
// device becomes dev2, and the next List reads pod-a's one container alone.
void ListTwoPodsThenChangeOne(
    FakeNode& node, const std::string& other, const std::function<void()>& start,
    const std::function<grpc::Status(::v1::ListPodResourcesResponse&)>& list,
    ::v1::ListPodResourcesResponse& response) {
  node.pods.SetPods({MakePod("pod-a", "pod-a", {"c"}), MakePod(other, other, {"d"})});
  node.devices.SetDevices("pod-a", "c", {{"resource", {{"dev0", {}}}}});
  node.devices.SetDevices(other, "d", {{"resource", {{"dev1", {}}}}});
  start();
  ASSERT_TRUE(list(response).ok());
  const int reads = node.devices.get_devices_calls();
  node.devices.SetDevices("pod-a", "c", {{"resource", {{"dev2", {}}}}});
  ASSERT_TRUE(list(response).ok());
  EXPECT_EQ(node.devices.get_devices_calls(), reads + 1) << "pod-a's one container";
  ASSERT_EQ(response.pod_resources_size(), 2);
  EXPECT_EQ(response.pod_resources(0).containers(0).devices(0).device_ids(0), "dev2");
  EXPECT_EQ(response.pod_resources(1).containers(0).devices(0).device_ids(0), "dev1");
}

// When the answer must be built again, only the pods whose allocations or description changed
// are read; the others' parts are reused, in the pods provider's order.
TEST_F(PodResourcesServerV1Test, ListReadsOnlyThePodsThatChanged) {
  ::v1::ListPodResourcesResponse response;
  ListTwoPodsThenChangeOne(
      node_, "pod-b", [this] { StartQuiet(node_.pods_and_devices()); },
      [this](::v1::ListPodResourcesResponse& out) { return List(out); }, response);
  int reads = node_.devices.get_devices_calls();

  // A pod the pods provider describes differently (a container more) is built again.
  node_.pods.Upsert(MakePod("pod-b", "pod-b", {"d", "e"}));
  ASSERT_TRUE(List(response).ok());
  EXPECT_EQ(node_.devices.get_devices_calls(), reads + 2) << "pod-b's two containers";
  ASSERT_EQ(response.pod_resources_size(), 2);
  EXPECT_EQ(response.pod_resources(0).name(), "pod-a");
  ASSERT_EQ(response.pod_resources(1).containers_size(), 2);
  EXPECT_EQ(response.pod_resources(1).containers(1).name(), "e");
}

// Providers that tell which pods changed since a revision: after a change List reads those
// pods alone, not the list of active pods, and the answer keeps UID order (the pods provider's
// order when it was last read whole).
TEST_F(PodResourcesServerV1Test, ListReadsOnlyThePodsNamedAsChanged) {
  node_.pods.ReportChanges(true);
  node_.devices.ReportChanges(true);
  ::v1::ListPodResourcesResponse response;
  ListTwoPodsThenChangeOne(
      node_, "pod-c", [this] { StartQuiet(node_.pods_and_devices()); },
      [this](::v1::ListPodResourcesResponse& out) { return List(out); }, response);
  const int whole_reads = node_.pods.active_pods_calls();
  EXPECT_EQ(whole_reads, 1) << "the first List only";
  int reads = node_.devices.get_devices_calls();

  // A pod that comes between the two, one described anew, one that leaves.
  node_.pods.Upsert(MakePod("pod-b", "pod-b", {"e"}));
  node_.devices.SetDevices("pod-b", "e", {{"resource", {{"dev3", {}}}}});
  node_.pods.Upsert(MakePod("pod-c", "pod-c", {"d", "f"}));
  ASSERT_TRUE(List(response).ok());
  EXPECT_EQ(node_.devices.get_devices_calls(), reads + 3) << "pod-b's one, pod-c's two";
  ASSERT_EQ(response.pod_resources_size(), 3);
  EXPECT_EQ(response.pod_resources(0).name(), "pod-a");
  EXPECT_EQ(response.pod_resources(1).name(), "pod-b");
  EXPECT_EQ(response.pod_resources(1).containers(0).devices(0).device_ids(0), "dev3");
  EXPECT_EQ(response.pod_resources(2).containers_size(), 2);
  node_.pods.Remove("pod-a");
  ASSERT_TRUE(List(response).ok());
  ASSERT_EQ(response.pod_resources_size(), 2);
  EXPECT_EQ(response.pod_resources(0).name(), "pod-b");
  EXPECT_EQ(response.pod_resources(1).name(), "pod-c");
  EXPECT_EQ(node_.pods.active_pods_calls(), whole_reads) << "never read whole again";

  // Too many changes to tell: the pods are read whole, and the answer has the same pods (in
  // the fake's order, which put pod-b last).
  for (int i = 0; i < 100; ++i) {
    node_.devices.SetDevices("pod-b", "e", {{"resource", {{"dev3", {}}}}});
  }
  ::v1::ListPodResourcesResponse whole;
  ASSERT_TRUE(List(whole).ok());
  EXPECT_EQ(node_.pods.active_pods_calls(), whole_reads + 1);
  ASSERT_EQ(whole.pod_resources_size(), 2);
  EXPECT_TRUE(ProtoEquals(whole.pod_resources(0), response.pod_resources(1)));
  EXPECT_TRUE(ProtoEquals(whole.pod_resources(1), response.pod_resources(0)));
}

// A pods provider that tells changes but does not list its pods in UID order: List keeps the
// provider's order and reads the pods whole.
TEST_F(PodResourcesServerV1Test, ListKeepsTheOrderOfAProviderNotInUidOrder) {
  node_.pods.SetPods({MakePod("pod-b", "pod-b", {"c"}), MakePod("pod-a", "pod-a", {"d"})});
  node_.pods.ReportChanges(true);
  node_.devices.ReportChanges(true);
  StartQuiet(node_.pods_and_devices());
  ::v1::ListPodResourcesResponse response;
  ASSERT_TRUE(List(response).ok());
  const int whole_reads = node_.pods.active_pods_calls();
  node_.devices.SetDevices("pod-a", "d", {{"resource", {{"dev0", {}}}}});
  ASSERT_TRUE(List(response).ok());
  EXPECT_EQ(node_.pods.active_pods_calls(), whole_reads + 1);
  ASSERT_EQ(response.pod_resources_size(), 2);
  EXPECT_EQ(response.pod_resources(0).name(), "pod-b");
  EXPECT_EQ(response.pod_resources(1).containers(0).devices(0).device_ids(0), "dev0");
}

// The CPU and memory providers report no revision (nor does a dynamic resources provider that
// cannot tell): every List is built.
TEST_F(PodResourcesServerV1Test, ListIsBuiltEveryTimeWithOtherResourceManagers) {
  node_.pods.SetPods({MakePod(kPodUid, "pod-name", {kContainer})});
  StartQuiet(node_.providers());
  const int hub_reads = node_.devices.get_devices_calls();
  ::v1::ListPodResourcesResponse response;
  ASSERT_TRUE(List(response).ok());
  ASSERT_TRUE(List(response).ok());
  EXPECT_EQ(node_.devices.get_devices_calls(), hub_reads + 2);
}

// A dynamic resources provider that tells its revision (devmgr serve's DRA side) keeps List's
// answer: kept while nothing changes, every pod built again after a change of claims.
TEST_F(PodResourcesServerV1Test, ListIsKeptWithDynamicResourcesThatTellTheirRevision) {
  node_.pods.SetPods({MakePod("pod-a", "pod-a", {"c"}), MakePod("pod-b", "pod-b", {"d"})});
  node_.dynamic_resources.ReportRevision(true);
  StartQuiet(node_.pods_devices_and_claims());
  ::v1::ListPodResourcesResponse first;
  ASSERT_TRUE(List(first).ok());
  const int reads = node_.dynamic_resources.calls();
  ::v1::ListPodResourcesResponse again;
  ASSERT_TRUE(List(again).ok());
  EXPECT_EQ(node_.dynamic_resources.calls(), reads) << "kept";
  EXPECT_TRUE(ProtoEquals(first, again));

  // A claim prepared for pod-b: the next List has it, and both pods were read again.
  node_.dynamic_resources.SetDynamicResources(
      "pod-b", "d", {ParseText<::v1::DynamicResource>(R"pb(claim_name: "gpu"
                                                           claim_namespace: "pod-namespace")pb")});
  ::v1::ListPodResourcesResponse changed;
  ASSERT_TRUE(List(changed).ok());
  EXPECT_EQ(node_.dynamic_resources.calls(), reads + 2);
  ASSERT_EQ(changed.pod_resources_size(), 2);
  ASSERT_EQ(changed.pod_resources(1).containers(0).dynamic_resources_size(), 1);
  EXPECT_EQ(changed.pod_resources(1).containers(0).dynamic_resources(0).claim_name(), "gpu");
  EXPECT_EQ(changed.pod_resources(0).containers(0).dynamic_resources_size(), 0);

  // A device change reads only the pod that changed.
  node_.devices.SetDevices("pod-a", "c", {{"resource", {{"dev0", {}}}}});
  ::v1::ListPodResourcesResponse devices;
  ASSERT_TRUE(List(devices).ok());
  EXPECT_EQ(node_.dynamic_resources.calls(), reads + 3);
  EXPECT_EQ(devices.pod_resources(1).containers(0).dynamic_resources_size(), 1);
}

// List reads its request itself (it answers with bytes): one that does not parse is refused
// with INTERNAL, the code a Go kubelet's gRPC gives. (gRPC C++'s typed methods answer such a
// request with an empty UNIMPLEMENTED.)
TEST_F(PodResourcesServerV1Test, ListRefusesAMalformedRequest) {
  Start();
  // A field tag whose varint never ends.
  const RawAnswer answer = RawCall(channel_, "/v1.PodResourcesLister/List", "\xff");
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::INTERNAL)
      << answer.status.error_message();
  EXPECT_EQ(node_.devices.update_calls(), 0);
  // Read before the rate limit and the counters, as grpc-go decodes before the interceptor.
  EXPECT_EQ(server_->counters().v1.requests_total.load(), 0u);
}

// GetAllocatableResources reads its request itself too.
TEST_F(PodResourcesServerV1Test, GetAllocatableResourcesRefusesAMalformedRequest) {
  Start();
  const RawAnswer answer =
      RawCall(channel_, "/v1.PodResourcesLister/GetAllocatableResources", "\xff");
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::INTERNAL)
      << answer.status.error_message();
  EXPECT_EQ(node_.devices.resource_allocatable_calls(), 0);
  EXPECT_EQ(server_->counters().v1.requests_total.load(), 0u);
}

// Get reads its request itself too: a typed method would answer UNIMPLEMENTED.
TEST_F(PodResourcesServerV1Test, GetRefusesAMalformedRequest) {
  Start();
  node_.pods.SetPods({MakePod("uid-1", "pod", {"c"})}, std::nullopt);
  const RawAnswer answer = RawCall(channel_, "/v1.PodResourcesLister/Get", "\xff");
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::INTERNAL)
      << answer.status.error_message();
  EXPECT_EQ(server_->counters().v1.requests_total.load(), 0u);
  // A request that parses is answered with the pod's bytes.
  ::v1::GetPodResourcesRequest request;
  request.set_pod_name("pod");
  request.set_pod_namespace("pod-namespace");
  const RawAnswer found =
      RawCall(channel_, "/v1.PodResourcesLister/Get", request.SerializeAsString());
  ASSERT_TRUE(found.status.ok()) << found.status.error_message();
  ::v1::GetPodResourcesResponse response;
  ASSERT_TRUE(response.ParseFromString(found.bytes));
  EXPECT_EQ(response.pod_resources().name(), "pod");
  EXPECT_EQ(server_->counters().v1.requests_get.load(), 1u);
}

}  // namespace
}  // namespace devmgr::podresources::testing
