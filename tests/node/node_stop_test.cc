// Node::Stop in the assembled node while a plugin found in plugins_registry/ never answers
// GetDevicePluginOptions: the node stops without waiting out the handshake the plugin holds
// (the plugin call timeout of 30 s, after a dial of up to 10 s).
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <thread>

#include "node/node.h"
#include "pluginwatcher/handler.h"
#include "tests/pluginwatcher/fake_registration_plugin.h"
#include "tests/testlib/fake_device_plugin.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::node {
namespace {

using ::devmgr::testing::FakeDevicePlugin;
using ::devmgr::testing::FakeRegistrationPlugin;
using ::devmgr::testing::MakeDevice;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;

constexpr char kGpu[] = "example.com/gpu";

// Before the Manager's registrations were stopped first, the watcher's Stop waited for the
// handler call, and this test failed after 10 s.
TEST(NodeStopTest, DoesNotWaitOutAHungPluginsHandshake) {
  TempDir dir;
  NodeOptions options;
  options.root_dir = dir.Sub("root");
  absl::StatusOr<std::unique_ptr<Node>> node = Node::Start(options);
  ASSERT_TRUE(node.ok()) << node.status();
  std::filesystem::create_directories(dir.Sub("hung"));
  FakeDevicePlugin hung(dir.Sub("hung/dp.sock"), kGpu, {MakeDevice("gpu-0")},
                        {.hang_get_options = true});
  ASSERT_TRUE(hung.Start().ok());
  FakeRegistrationPlugin registrar(
      (*node)->paths().registry_dir / "hung.sock",
      ::devmgr::testing::MakeInfo(pluginwatcher::kDevicePlugin, kGpu,
                                  dir.Sub("hung/dp.sock").string(), {"v1beta1"}));
  ASSERT_TRUE(registrar.Serve().ok());
  ASSERT_TRUE(WaitFor([&] { return hung.get_options_calls() == 1; }));

  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    (*node)->Stop();
    stopped = true;
  });
  EXPECT_TRUE(WaitFor([&] { return stopped.load(); })) << "still waiting on the hung plugin";
  stopper.join();
  EXPECT_TRUE((*node)->manager().GetCapacity().capacity.empty());
}

// A host that keeps calling the node's admission after Stop is refused and changes nothing: a
// pod removed then is still there at the next start. Before, the removal was written after Stop.
TEST(NodeStopTest, TheAdmissionRefusesEveryCallAfterStop) {
  TempDir dir;
  NodeOptions options;
  options.root_dir = dir.Sub("root");
  absl::StatusOr<std::unique_ptr<Node>> node = Node::Start(options);
  ASSERT_TRUE(node.ok()) << node.status();
  devicemanager::Pod pod;
  pod.uid = "uid-1";
  pod.name = "p";
  pod.namespace_name = "default";
  devicemanager::Container container;
  container.name = "c";
  pod.containers.push_back(container);
  ASSERT_TRUE((*node)->admission().Admit(pod).ok());
  (*node)->Stop();
  EXPECT_EQ((*node)->admission().Remove("uid-1").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*node)->admission().RunOptions("uid-1", "c").status().code(),
            absl::StatusCode::kFailedPrecondition);
  pod.uid = "uid-2";
  EXPECT_EQ((*node)->admission().Admit(pod).status().code(), absl::StatusCode::kFailedPrecondition);
  node->reset();

  node = Node::Start(options);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_TRUE((*node)->admission().RunOptions("uid-1", "c").ok()) << "the pod is still there";
  EXPECT_EQ((*node)->admission().RunOptions("uid-2", "c").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace devmgr::node
