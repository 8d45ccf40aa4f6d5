// `devmgr plugin generic` serving the shipped NVIDIA example to a real `devmgr serve`, as
// separate processes, over a fake /dev and /sys (tests/plugins/fake_host.h): a pod admitted for
// nvidia.com/gpu gets its GPU's node plus the three shared control nodes and the CDI name of the
// example's kind, and `pods list` reports the GPU's NUMA node as sysfs gives it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "nlohmann/json.hpp"
#include "tests/integration/daemon_harness.h"
#include "tests/plugins/fake_host.h"
#include "tests/testlib/wait_for.h"

namespace devmgr {
namespace {

using Json = nlohmann::json;
using testing::BackgroundProcess;
using testing::DaemonHarness;
using testing::DevmgrBinary;
using testing::ExamplePath;
using testing::FakeGpuHost;
using testing::PodManifest;
using testing::ProcessResult;
using testing::WaitFor;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr char kGpu[] = "nvidia.com/gpu";

class GenericGpuTest : public ::testing::Test {
 protected:
  // The plugin loads the fake NVML (tests/plugins/fake_nvml.cc), which lists the fake host's
  // two GPUs and plays the events that NvmlEvent appends.
  std::unique_ptr<BackgroundProcess> StartGenericPlugin(
      const std::string& config = ExamplePath("nvidia-gpu.yaml").string(),
      const std::string& rescan_interval = "50ms") {
    const char* fake_nvml = std::getenv("DEVMGR_FAKE_NVML");  // NOLINT(concurrency-mt-unsafe)
    EXPECT_NE(fake_nvml, nullptr) << "DEVMGR_FAKE_NVML is not set: run through meson test";
    std::ofstream(nvml_script_) << "gpu " << MinorOf("nvidia0") << " GPU-0\n"
                                << "gpu " << MinorOf("nvidia1") << " GPU-1\n";
    auto plugin = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{"/usr/bin/env",
                                 "FAKE_NVML_SCRIPT=" + nvml_script_,
                                 DevmgrBinary(),
                                 "plugin",
                                 "generic",
                                 "--root-dir",
                                 h_.Root(),
                                 "--config",
                                 config,
                                 "--dev-root",
                                 host_.dev_root().string(),
                                 "--sys-root",
                                 host_.sys_root().string(),
                                 "--proc-root",
                                 host_.proc_root().string(),
                                 "--cdi-dir",
                                 h_.Path("cdi").string(),
                                 "--nvml-library",
                                 fake_nvml == nullptr ? "" : fake_nvml,
                                 "--check-interval",
                                 "50ms",
                                 "--rescan-interval",
                                 rescan_interval});
    EXPECT_TRUE(plugin->started());
    return plugin;
  }

  // MinorOf: the minor of the fake host's /dev/<gpu>, which NVML gives as the GPU's.
  unsigned int MinorOf(const std::string& gpu) const {
    struct stat st {};
    EXPECT_EQ(::stat((host_.dev_root() / "dev" / gpu).c_str(), &st), 0) << gpu;
    return minor(st.st_rdev);
  }

  // NvmlEvent: the fake NVML reports XID `xid` of `gpu`.
  void NvmlEvent(const std::string& gpu, int xid) {
    std::ofstream(nvml_script_, std::ios::app) << "xid " << MinorOf(gpu) << " " << xid << "\n";
  }

  // The GPU a container got, with its NUMA nodes, from `pods list`.
  struct Held {
    std::string id;
    std::set<std::string> numa_nodes;
  };
  Held GpuOf(const std::string& uid) {
    Held held;
    for (const auto& pod : h_.ListPods().value("pods", Json::array())) {
      if (pod["pod"].value("uid", "") != uid) continue;
      for (const auto& resource : pod["containers"][0]["resources"]) {
        if (resource.value("resourceName", "") != kGpu) continue;
        EXPECT_EQ(resource["devices"].size(), 1u) << pod.dump();
        const Json& device = resource["devices"][0];
        held.id = device.value("id", "");
        // int64s are JSON numbers: "1" is their text.
        for (const auto& node : device.value("numaNodes", Json::array())) {
          held.numa_nodes.insert(node.dump());
        }
      }
    }
    return held;
  }

  DaemonHarness h_;
  FakeGpuHost host_{h_.Path("")};
  const std::string nvml_script_ = h_.Path("nvml-script").string();
};

TEST_F(GenericGpuTest, PodGetsItsGpuNodeTheSharedNodesAndTheNumaNode) {
  auto serve = h_.StartServe();
  ASSERT_NE(serve, nullptr);
  auto plugin = StartGenericPlugin();
  ASSERT_TRUE(WaitFor([&] { return h_.Allocatable(kGpu) == 2; }, 20s))
      << plugin->err() << " allocatable " << h_.Allocatable(kGpu);

  std::set<std::string> seen;
  for (const std::string uid : {"gpu-pod-a", "gpu-pod-b"}) {
    ProcessResult admitted = h_.Admit(PodManifest(uid, kGpu, 1));
    ASSERT_EQ(admitted.exit_code, 0) << admitted.err << plugin->err();
    const Held gpu = GpuOf(uid);
    ASSERT_TRUE(gpu.id == "nvidia0" || gpu.id == "nvidia1") << gpu.id;
    seen.insert(gpu.id);
    // nvidia0 sits on NUMA node 0, nvidia1 on node 1 (the fake sysfs says so).
    EXPECT_EQ(gpu.numa_nodes, std::set<std::string>{gpu.id.substr(6)}) << gpu.id;

    ProcessResult options =
        h_.Run({"pods", "options", "--root-dir", h_.Root(), "-o", "json", uid, "c"});
    ASSERT_EQ(options.exit_code, 0) << options.err;
    const Json run = Json::parse(options.out, nullptr, false)["options"];
    std::set<std::string> nodes;
    for (const auto& device : run.value("devices", Json::array())) {
      nodes.insert(device.value("hostPath", ""));
      EXPECT_EQ(device.value("hostPath", ""), device.value("containerPath", ""));
    }
    EXPECT_EQ(nodes, (std::set<std::string>{"/dev/" + gpu.id, "/dev/nvidiactl", "/dev/nvidia-uvm",
                                            "/dev/nvidia-uvm-tools"}))
        << options.out;
    EXPECT_EQ(run["devices"].size(), 4u) << options.out;
    ASSERT_EQ(run.value("cdiDevices", Json::array()).size(), 1u) << options.out;
    EXPECT_EQ(run["cdiDevices"][0], "devmgr.io/nvidia-gpu=" + gpu.id);
  }
  EXPECT_EQ(seen.size(), 2u) << "the two pods got the two GPUs";
  EXPECT_TRUE(std::filesystem::exists(h_.Path("cdi/devmgr.io-nvidia-gpu.json")));

  DaemonHarness::Stop(*plugin);
  EXPECT_FALSE(std::filesystem::exists(h_.Path("cdi/devmgr.io-nvidia-gpu.json")));
  DaemonHarness::Stop(*serve);
}

// A group whose GPUs two containers may share (count: 2): a container that asks for two gets
// shares of both GPUs, through the plugin's GetPreferredAllocation, not two shares of one (one
// GPU's node, where it asked for two GPUs).
TEST_F(GenericGpuTest, AContainerAskingForTwoSharesGetsTwoGpus) {
  const std::string config = h_.Path("shared-gpu.yaml").string();
  std::ofstream(config) << "namespace: nvidia.com\n"
                           "groups:\n"
                           "  - {name: gpu, paths: [\"/dev/nvidia[0-9]*\"], count: 2}\n";
  auto serve = h_.StartServe();
  ASSERT_NE(serve, nullptr);
  auto plugin = StartGenericPlugin(config);
  ASSERT_TRUE(WaitFor([&] { return h_.Allocatable(kGpu) == 4; }, 20s))
      << plugin->err() << " allocatable " << h_.Allocatable(kGpu);
  ProcessResult admitted = h_.Admit(PodManifest("two-gpus", kGpu, 2));
  ASSERT_EQ(admitted.exit_code, 0) << admitted.err << plugin->err();
  ProcessResult options =
      h_.Run({"pods", "options", "--root-dir", h_.Root(), "-o", "json", "two-gpus", "c"});
  ASSERT_EQ(options.exit_code, 0) << options.err;
  std::set<std::string> nodes;
  for (const auto& device :
       Json::parse(options.out, nullptr, false)["options"].value("devices", Json::array())) {
    nodes.insert(device.value("hostPath", ""));
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"/dev/nvidia0", "/dev/nvidia1"})) << options.out;
  DaemonHarness::Stop(*plugin);
  DaemonHarness::Stop(*serve);
}

// The shipped example watches its GPUs through NVML: a GPU that reports XID 79 (fallen off the
// bus) is served unhealthy, so the daemon counts one GPU allocatable and the next pods get the
// other GPU or none; XID 13, an application's fault, reported first by the other GPU, changes
// nothing. The XID is served at once: the plugin's rescans here are an hour apart.
TEST_F(GenericGpuTest, AGpuThatReportsAnXidErrorIsNoLongerAllocated) {
  auto serve = h_.StartServe();
  ASSERT_NE(serve, nullptr);
  auto plugin = StartGenericPlugin(ExamplePath("nvidia-gpu.yaml").string(), "1h");
  ASSERT_TRUE(WaitFor([&] { return h_.Allocatable(kGpu) == 2; }, 20s))
      << plugin->err() << " allocatable " << h_.Allocatable(kGpu);

  NvmlEvent("nvidia0", 13);
  NvmlEvent("nvidia1", 79);
  ASSERT_TRUE(WaitFor([&] { return h_.Allocatable(kGpu) == 1; }, 20s))
      << plugin->err() << " allocatable " << h_.Allocatable(kGpu);
  ProcessResult admitted = h_.Admit(PodManifest("after-xid", kGpu, 1));
  ASSERT_EQ(admitted.exit_code, 0) << admitted.err << plugin->err();
  EXPECT_EQ(GpuOf("after-xid").id, "nvidia0");
  ProcessResult refused = h_.Admit(PodManifest("no-gpu-left", kGpu, 1));
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_TRUE(absl::StrContains(plugin->err(), "XID 79")) << plugin->err();

  DaemonHarness::Stop(*plugin);
  DaemonHarness::Stop(*serve);
}

}  // namespace
}  // namespace devmgr
