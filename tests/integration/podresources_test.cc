// PodResources end to end through the real Manager: an SDK plugin registers, a pod is admitted,
// and a monitoring client (our gRPC client, and `devmgr podresources` as a process) sees what
// it got; when the pod leaves the active list, List's garbage collection frees its devices.
#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "devicemanager/manager.h"
#include "deviceplugin/plugin.h"
#include "node/manager_devices_provider.h"
#include "podresources/client.h"
#include "podresources/server.h"
#include "podresources/v1/api.grpc.pb.h"
#include "tests/testlib/pods.h"
#include "tests/testlib/subprocess.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr {
namespace {

using testing::MakeContainer;
using testing::MakePod;
using testing::TempDir;
using testing::WaitFor;

constexpr char kResource[] = "example.com/gpu";

// The host's pod store, shared by the Manager's active-pods source and PodResources.
class PodStore final : public podresources::PodsProvider {
 public:
  void Add(const devicemanager::Pod& pod) {
    absl::MutexLock lock(&mu_);
    podresources::Pod view{pod.uid, pod.name, pod.namespace_name, {}, {}};
    for (const auto& c : pod.containers) view.containers.push_back({c.name, ""});
    pods_.push_back(view);
  }
  void Clear() {
    absl::MutexLock lock(&mu_);
    pods_.clear();
  }
  std::vector<std::string> ActiveUids() {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> uids;
    for (const auto& pod : pods_) uids.push_back(pod.uid);
    return uids;
  }
  std::vector<podresources::Pod> GetPods() override { return GetActivePods(); }
  std::vector<podresources::Pod> GetActivePods() override {
    absl::MutexLock lock(&mu_);
    return pods_;
  }
  std::optional<podresources::Pod> GetPodByName(const std::string& ns,
                                                const std::string& name) override {
    absl::MutexLock lock(&mu_);
    for (const auto& pod : pods_) {
      if (pod.namespace_name == ns && pod.name == name) return pod;
    }
    return std::nullopt;
  }

 private:
  absl::Mutex mu_;
  std::vector<podresources::Pod> pods_ ABSL_GUARDED_BY(mu_);
};

TEST(PodResourcesThroughManagerTest, ListAllocatableAndGarbageCollection) {
  TempDir root;
  PodStore store;
  devicemanager::ManagerOptions manager_options;
  manager_options.plugin_dir = root.Sub("device-plugins");
  auto manager = devicemanager::CreateManager(manager_options);
  ASSERT_TRUE(manager->Start([&] { return store.ActiveUids(); }, [] { return true; }).ok());

  deviceplugin::PluginOptions plugin_options;
  plugin_options.resource_namespace = "example.com";
  plugin_options.plugin_dir = manager_options.plugin_dir;
  plugin_options.check_interval = absl::Milliseconds(20);
  auto plugin = deviceplugin::Plugin::Start(plugin_options, nullptr);
  ASSERT_TRUE(plugin.ok()) << plugin.status();
  deviceplugin::DeviceTree tree;
  for (int i = 0; i < 4; ++i) {
    deviceplugin::DeviceInfo info;
    info.numa_nodes = {i % 2};
    tree.AddDevice("gpu", "gpu" + std::to_string(i), info);
  }
  (*plugin)->Notify(std::move(tree));
  ASSERT_TRUE(WaitFor([&] { return manager->GetCapacity().allocatable[kResource] == 4; }));

  devicemanager::Pod pod = MakePod("uid-1", {MakeContainer("main", {{kResource, 2}})});
  pod.name = "trainer";
  store.Add(pod);
  ASSERT_TRUE(manager->AdmitPod(pod).ok());

  node::ManagerDevicesProvider devices(*manager);
  podresources::ServerOptions server_options;
  server_options.socket_path = root.Sub("pod-resources/kubelet.sock");
  std::filesystem::create_directories(root.Sub("pod-resources"));
  auto server =
      podresources::PodResourcesServer::Create(server_options, {&store, &devices}, nullptr);
  ASSERT_TRUE(server.ok()) << server.status();

  podresources::ClientOptions client_options;
  client_options.socket_path = server_options.socket_path;
  auto channel = podresources::Dial(client_options);
  ASSERT_TRUE(channel.ok()) << channel.status();
  auto stub = v1::PodResourcesLister::NewStub(*channel);

  v1::ListPodResourcesResponse list;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->List(&context, {}, &list).ok());
  }
  ASSERT_EQ(list.pod_resources_size(), 1);
  const auto& listed = list.pod_resources(0);
  EXPECT_EQ(listed.name(), "trainer");
  ASSERT_EQ(listed.containers_size(), 1);
  std::set<std::string> got;
  for (const auto& d : listed.containers(0).devices()) {
    EXPECT_EQ(d.resource_name(), kResource);
    ASSERT_EQ(d.device_ids_size(), 1);
    ASSERT_EQ(d.topology().nodes_size(), 1) << "one entry per (device, NUMA node)";
    got.insert(d.device_ids(0));
  }
  EXPECT_EQ(got.size(), 2U);
  const auto held = manager->GetDevices("uid-1", "main");
  ASSERT_EQ(held.count(kResource), 1U);
  for (const auto& [id, device] : held.at(kResource)) EXPECT_EQ(got.count(id), 1U) << id;

  v1::AllocatableResourcesResponse allocatable;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->GetAllocatableResources(&context, {}, &allocatable).ok());
  }
  EXPECT_EQ(allocatable.devices_size(), 4);

  // The same through the command line, as an operator would run it.
  testing::ProcessResult cli =
      testing::RunProcess({testing::DevmgrBinary(), "podresources", "list", "--socket",
                           server_options.socket_path.string(), "-o", "json"});
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.out.find("trainer"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find(*got.begin()), std::string::npos) << cli.out;

  // The pod ends: the next List frees its devices, as upstream's List does.
  store.Clear();
  {
    grpc::ClientContext context;
    list.Clear();
    ASSERT_TRUE(stub->List(&context, {}, &list).ok());
  }
  EXPECT_EQ(list.pod_resources_size(), 0);
  EXPECT_TRUE(manager->GetDevices("uid-1", "main").empty());

  (*server)->Shutdown();
  (*plugin)->Stop();
  manager->Stop();
}

}  // namespace
}  // namespace devmgr
