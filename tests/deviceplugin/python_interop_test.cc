// The SDK's DevicePlugin server against a kubelet written with Python's grpcio (Debian's
// python3-grpcio), with stubs generated from our protos at test time: a second gRPC
// implementation must read and write the same wire.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "deviceplugin/plugin.h"
#include "nlohmann/json.hpp"
#include "tests/deviceplugin/source_root.h"
#include "tests/testlib/python_grpc.h"
#include "tests/testlib/subprocess.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::deviceplugin {
namespace {

using testing::BackgroundProcess;
using testing::GeneratePythonStubs;
using testing::kPython;
using testing::MissingPythonGrpc;
using testing::TempDir;
using testing::WaitFor;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

// Prefers the devices offered last, so that the answer cannot be the SDK's default by chance.
class ReversePreference : public PreferredAllocator {
 public:
  HookResult<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const std::string& /*device_type*/,
      const v1beta1::PreferredAllocationRequest& request) override {
    v1beta1::PreferredAllocationResponse response;
    for (const auto& container : request.container_requests()) {
      auto* out = response.add_container_responses();
      for (int i = container.available_deviceids_size() - 1;
           i >= 0 && out->deviceids_size() < container.allocation_size(); --i) {
        out->add_deviceids(container.available_deviceids(i));
      }
    }
    return response;
  }
};

TEST(PythonInteropTest, GrpcioKubeletRegistersAllocatesAndPrefers) {
  if (auto missing = MissingPythonGrpc(); missing.has_value()) GTEST_SKIP() << *missing;

  TempDir dir;
  const std::filesystem::path source = DEVMGR_SOURCE_ROOT;
  const auto stubs = dir.Sub("stubs");
  auto generated = GeneratePythonStubs(source / "proto", "deviceplugin/v1beta1/api.proto", stubs);
  ASSERT_EQ(generated.exit_code, 0) << generated.err;

  const auto plugin_dir = dir.Sub("device-plugins");
  std::filesystem::create_directories(plugin_dir);
  BackgroundProcess kubelet({kPython, (source / "tests/deviceplugin/python_kubelet.py").string(),
                             stubs.string(), plugin_dir.string()});
  ASSERT_TRUE(kubelet.started());
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(plugin_dir / "kubelet.sock"); }, 30s))
      << kubelet.err();

  ReversePreference preference;
  PluginOptions options;
  options.resource_namespace = "example.com";
  options.plugin_dir = plugin_dir;
  options.check_interval = absl::Milliseconds(50);
  options.hooks.preferred_allocator = &preference;
  options.cdi = CdiOptions{.folder = dir.Sub("cdi"), .vendor = "example.com"};
  auto plugin = Plugin::Start(options, nullptr);
  ASSERT_TRUE(plugin.ok()) << plugin.status();
  DeviceTree tree;
  for (int i = 0; i < 4; ++i) {
    const std::string id = "d" + std::to_string(i);
    tree.AddDevice("gpu", id,
                   DeviceInfo{.health = i == 3 ? Health::kUnhealthy : Health::kHealthy,
                              .nodes = {{"/dev/" + id, "/dev/gpu", "rw"}},
                              .mounts = {{"/opt/" + id, "/opt/gpu", true}},
                              .envs = {{"GPU", id}},
                              .annotations = {{"example.com/gpu", id}},
                              .numa_nodes = {i % 2}});
  }
  (*plugin)->Notify(tree);

  ASSERT_EQ(kubelet.Wait(60s), std::optional<int>(0)) << kubelet.err();
  const nlohmann::json seen = nlohmann::json::parse(kubelet.out(), nullptr, false);
  ASSERT_FALSE(seen.is_discarded()) << kubelet.out();
  ASSERT_FALSE(seen.contains("error")) << seen["error"];

  EXPECT_EQ(seen["register"]["version"], "v1beta1");
  EXPECT_EQ(seen["register"]["endpoint"], "example.com-gpu.sock");
  EXPECT_EQ(seen["register"]["resourceName"], "example.com/gpu");
  EXPECT_EQ(seen["register"]["preferredAvailable"], true);
  EXPECT_EQ(seen["register"]["preStartRequired"], false);
  EXPECT_EQ(seen["options"]["preferredAvailable"], true);

  ASSERT_EQ(seen["devices"].size(), 4u);
  EXPECT_EQ(seen["devices"]["d0"]["health"], "Healthy");
  EXPECT_EQ(seen["devices"]["d3"]["health"], "Unhealthy");
  EXPECT_EQ(seen["devices"]["d1"]["numa"], nlohmann::json::array({1}));

  const auto& allocate = seen["allocate"];
  EXPECT_EQ(allocate["envs"]["GPU"], "d1");
  EXPECT_EQ(allocate["annotations"]["example.com/gpu"], "d1");
  ASSERT_EQ(allocate["devices"].size(), 1u);
  EXPECT_EQ(allocate["devices"][0]["hostPath"], "/dev/d1");
  EXPECT_EQ(allocate["devices"][0]["containerPath"], "/dev/gpu");
  EXPECT_EQ(allocate["devices"][0]["permissions"], "rw");
  EXPECT_EQ(allocate["mounts"][0]["readOnly"], true);
  EXPECT_EQ(allocate["cdiDevices"], nlohmann::json::array({"example.com/gpu=d1"}));
  EXPECT_EQ(seen["unknownDevice"], "INVALID_ARGUMENT");
  EXPECT_EQ(seen["preferred"], nlohmann::json::array({"d3", "d2"}));
}

}  // namespace
}  // namespace devmgr::deviceplugin
