// `devmgr plugin fake|generic` as separate processes against the fake kubelet: registration both
// ways, re-registration after the kubelet restarts, health flips, injected failures, CDI files,
// real host devices, and a clean exit on SIGTERM.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/file_store.h"
#include "nlohmann/json.hpp"
#include "tests/deviceplugin/fake_kubelet.h"
#include "tests/testlib/subprocess.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::cli {
namespace {

using testing::DevmgrBinary;
using testing::FakeKubelet;
using testing::RunProcess;
using testing::TempDir;
using testing::WaitFor;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

// A devmgr process in the background.
class PluginProcess : public testing::BackgroundProcess {
 public:
  explicit PluginProcess(std::vector<std::string> args)
      : BackgroundProcess(WithBinary(std::move(args))) {}

 private:
  static std::vector<std::string> WithBinary(std::vector<std::string> args) {
    args.insert(args.begin(), DevmgrBinary());
    return args;
  }
};

class PluginCommandTest : public ::testing::Test {
 protected:
  std::vector<std::string> Fake(std::vector<std::string> extra) {
    std::vector<std::string> args = {"plugin",
                                     "fake",
                                     "--root-dir",
                                     root_.path().string(),
                                     "--resource",
                                     "example.com/fake",
                                     "--check-interval=50ms"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  bool Seen(const std::string& resource, int registrations, size_t devices) {
    return WaitFor(
        [&] {
          auto seen = kubelet_.Resource(resource);
          return seen.registrations == registrations && seen.connected &&
                 seen.devices.size() == devices;
        },
        20s);
  }

  // SIGTERM, then exit 0 within a few seconds.
  void ExpectCleanExit(PluginProcess& plugin) {
    plugin.Signal(SIGTERM);
    EXPECT_EQ(plugin.Wait(10s), std::optional<int>(0)) << plugin.err();
  }

  TempDir root_;
  FakeKubelet kubelet_{root_.Sub("device-plugins")};
};

TEST_F(PluginCommandTest, FakeRegistersServesAndExitsCleanly) {
  ASSERT_TRUE(kubelet_.Start().ok());
  PluginProcess plugin(Fake({"--devices", "4", "--numa-nodes", "2"}));
  ASSERT_TRUE(plugin.started());
  ASSERT_TRUE(Seen("example.com/fake", 1, 4)) << plugin.err();
  auto seen = kubelet_.Resource("example.com/fake");
  EXPECT_EQ(seen.devices["dev-3"].numa_nodes, std::vector<int64_t>{1});
  EXPECT_EQ(seen.devices["dev-0"].health, "Healthy");
  EXPECT_FALSE(seen.options.get_preferred_allocation_available());

  auto response = kubelet_.Allocate("example.com/fake", {"dev-2"});
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->container_responses(0).envs().at("DEVMGR_FAKE_DEVICE_2"), "dev-2");

  ExpectCleanExit(plugin);
  EXPECT_FALSE(std::filesystem::exists(root_.Sub("device-plugins") / "example.com-fake.sock"));
  EXPECT_TRUE(WaitFor([&] { return !kubelet_.Resource("example.com/fake").connected; }));
}

TEST_F(PluginCommandTest, FakeReRegistersAfterTheKubeletRestarts) {
  ASSERT_TRUE(kubelet_.Start().ok());
  PluginProcess plugin(Fake({"--devices", "2"}));
  ASSERT_TRUE(Seen("example.com/fake", 1, 2)) << plugin.err();
  kubelet_.Stop();
  ASSERT_TRUE(kubelet_.Start(/*remove_plugin_sockets=*/true).ok());
  ASSERT_TRUE(Seen("example.com/fake", 2, 2)) << plugin.err();
  EXPECT_TRUE(kubelet_.Allocate("example.com/fake", {"dev-1"}).ok());
  ExpectCleanExit(plugin);
}

TEST_F(PluginCommandTest, FakeRegistersThroughPluginsRegistry) {
  PluginProcess plugin(Fake({"--devices", "3", "--registry"}));
  const auto socket = root_.Sub("plugins_registry") / "example.com-fake.sock";
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(socket); }, 20s)) << plugin.err();
  ASSERT_TRUE(kubelet_.RegisterFromRegistry(socket).ok());
  ASSERT_TRUE(Seen("example.com/fake", 1, 3));
  // Removed (as a cleanup of the registry would): the plugin puts it back, and the watcher
  // registers it again.
  std::filesystem::remove(socket);
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(socket); }, 20s)) << plugin.err();
  ASSERT_TRUE(kubelet_.RegisterFromRegistry(socket).ok());
  ASSERT_TRUE(Seen("example.com/fake", 2, 3));
  ExpectCleanExit(plugin);
  EXPECT_FALSE(std::filesystem::exists(socket));
}

TEST_F(PluginCommandTest, FakeFlipsHealthOnSignalAndOnSchedule) {
  ASSERT_TRUE(kubelet_.Start().ok());
  PluginProcess plugin(Fake({"--devices", "2"}));
  ASSERT_TRUE(Seen("example.com/fake", 1, 2)) << plugin.err();
  plugin.Signal(SIGUSR1);
  ASSERT_TRUE(WaitFor([&] {
    return kubelet_.Resource("example.com/fake").devices["dev-0"].health == "Unhealthy";
  }));
  EXPECT_EQ(kubelet_.Resource("example.com/fake").devices["dev-1"].health, "Healthy");
  ExpectCleanExit(plugin);

  PluginProcess scheduled(Fake({"--devices", "2", "--flip-every", "30ms"}));
  ASSERT_TRUE(WaitFor([&] { return kubelet_.Resource("example.com/fake").updates >= 6; }, 20s))
      << scheduled.err();
  ExpectCleanExit(scheduled);
}

TEST_F(PluginCommandTest, FakeInjectsAllocateErrorsLatencyAndHangs) {
  ASSERT_TRUE(kubelet_.Start().ok());
  {
    PluginProcess plugin(Fake({"--allocate-error", "injected failure"}));
    ASSERT_TRUE(Seen("example.com/fake", 1, 1)) << plugin.err();
    auto response = kubelet_.Allocate("example.com/fake", {"dev-0"});
    EXPECT_EQ(response.status().code(), absl::StatusCode::kInternal);
    EXPECT_EQ(response.status().message(), "injected failure");
    ExpectCleanExit(plugin);
  }
  {
    PluginProcess plugin(Fake({"--allocate-latency=300ms"}));
    ASSERT_TRUE(Seen("example.com/fake", 2, 1)) << plugin.err();
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(kubelet_.Allocate("example.com/fake", {"dev-0"}).ok());
    EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
    ExpectCleanExit(plugin);
  }
  {
    PluginProcess plugin(Fake({"--allocate-hang"}));
    ASSERT_TRUE(Seen("example.com/fake", 3, 1)) << plugin.err();
    EXPECT_EQ(kubelet_.Allocate("example.com/fake", {"dev-0"}, 300ms).status().code(),
              absl::StatusCode::kDeadlineExceeded);
    ExpectCleanExit(plugin);  // a hung Allocate does not keep the plugin from stopping
  }
}

TEST_F(PluginCommandTest, FakePreferredAllocationPolicies) {
  ASSERT_TRUE(kubelet_.Start().ok());
  PluginProcess plugin(Fake({"--devices", "4", "--numa-nodes", "2", "--preferred", "numa"}));
  ASSERT_TRUE(Seen("example.com/fake", 1, 4)) << plugin.err();
  EXPECT_TRUE(kubelet_.Resource("example.com/fake").options.get_preferred_allocation_available());
  // dev-1 and dev-3 are on NUMA node 1, dev-0 and dev-2 on node 0.
  auto numa = kubelet_.GetPreferredAllocation("example.com/fake",
                                              {"dev-0", "dev-1", "dev-2", "dev-3"}, {"dev-1"}, 2);
  ASSERT_TRUE(numa.ok()) << numa.status();
  ASSERT_EQ(numa->container_responses(0).deviceids_size(), 2);
  EXPECT_EQ(numa->container_responses(0).deviceids(0), "dev-1");
  EXPECT_EQ(numa->container_responses(0).deviceids(1), "dev-3");
  ExpectCleanExit(plugin);

  PluginProcess first(Fake({"--devices", "4", "--preferred", "first"}));
  ASSERT_TRUE(Seen("example.com/fake", 2, 4)) << first.err();
  auto picked = kubelet_.GetPreferredAllocation("example.com/fake", {"dev-3", "dev-0", "dev-2"},
                                                {"dev-2"}, 2);
  ASSERT_TRUE(picked.ok()) << picked.status();
  ASSERT_EQ(picked->container_responses(0).deviceids_size(), 2);
  EXPECT_EQ(picked->container_responses(0).deviceids(0), "dev-2");
  EXPECT_EQ(picked->container_responses(0).deviceids(1), "dev-3");
  ExpectCleanExit(first);
}

TEST_F(PluginCommandTest, FakeWritesCdiSpecsAndRemovesThemOnExit) {
  ASSERT_TRUE(kubelet_.Start().ok());
  PluginProcess plugin(Fake({"--devices", "2", "--cdi-dir", root_.Sub("cdi").string()}));
  ASSERT_TRUE(Seen("example.com/fake", 1, 2)) << plugin.err();
  const auto file = root_.Sub("cdi") / "example.com-fake.json";
  auto spec = nlohmann::json::parse(*ReadWholeFile(file));
  EXPECT_EQ(spec["cdiVersion"], "0.5.0");
  ASSERT_EQ(spec["devices"].size(), 2u);
  // A device node any host has: CDI refuses a device that changes nothing in the container.
  EXPECT_EQ(spec["devices"][1]["containerEdits"]["deviceNodes"][0]["path"],
            "/dev/devmgr-fake/dev-1");
  EXPECT_EQ(spec["devices"][1]["containerEdits"]["deviceNodes"][0]["hostPath"], "/dev/null");
  auto response = kubelet_.Allocate("example.com/fake", {"dev-1"});
  ASSERT_TRUE(response.ok());
  ASSERT_EQ(response->container_responses(0).cdi_devices_size(), 1);
  EXPECT_EQ(response->container_responses(0).cdi_devices(0).name(), "example.com/fake=dev-1");
  ExpectCleanExit(plugin);
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST_F(PluginCommandTest, FakeServesAHundredThousandDevices) {
  ASSERT_TRUE(kubelet_.Start().ok());
  PluginProcess plugin(Fake({"--devices", "100000", "--numa-nodes", "4"}));
  ASSERT_TRUE(Seen("example.com/fake", 1, 100'000)) << plugin.err();
  EXPECT_TRUE(kubelet_.Allocate("example.com/fake", {"dev-99999"}).ok());
  ExpectCleanExit(plugin);
}

TEST_F(PluginCommandTest, BadUsageExitsTwoWithOneLine) {
  const std::string root = root_.path().string();
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"plugin", "fake", "--root-dir", root},
           {"plugin", "fake", "--root-dir", root, "--resource", "nonamespace"},
           {"plugin", "fake", "--root-dir", root, "--resource", "a.b/c", "--flip-every", "often"},
           {"plugin", "fake", "--root-dir", root, "--resource", "a.b/c", "--preferred", "best"},
           {"plugin", "fake", "--root-dir", root, "--resource", "A_B/c"},
           {"plugin", "fake", "--root-dir", root, "--resource", "a.b/c", "--devices", "-1"},
           // A billion devices, built before the plugin serves, took 23 GiB.
           {"plugin", "fake", "--root-dir", root, "--resource", "a.b/c", "--devices", "1000000000"},
           {"plugin", "fake-dra", "--root-dir", root, "--driver", "a.b", "--devices", "1000001"},
           {"plugin", "generic", "--root-dir", root, "--config", root + "/missing.yaml"},
           // A CDI kind CDI refuses (its vendor begins with a digit): before, the type was
           // served without CDI, and the log alone said so.
           {"plugin", "fake", "--root-dir", root, "--resource", "3dfx.com/gpu", "--cdi-dir",
            root + "/cdi"},
       }) {
    std::vector<std::string> argv = args;
    argv.insert(argv.begin(), DevmgrBinary());
    auto result = RunProcess(argv);
    EXPECT_EQ(result.exit_code, 2) << args[3] << " " << result.err;
    EXPECT_FALSE(result.err.empty());
    EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;
  }
}

// A namespace the kubelet keeps for itself is refused with that reason: kubernetes.io is a DNS
// subdomain, and "want a DNS subdomain like example.com" misled.
TEST_F(PluginCommandTest, AReservedNamespaceIsRefusedAsReserved) {
  for (const std::string resource : {"kubernetes.io/gpu", "gpu.kubernetes.io/gpu"}) {
    auto result = RunProcess({DevmgrBinary(), "plugin", "fake", "--root-dir", root_.path().string(),
                              "--resource", resource});
    EXPECT_EQ(result.exit_code, 2) << resource << ": " << result.err;
    EXPECT_NE(result.err.find("a namespace ending in kubernetes.io is kept for native resources"),
              std::string::npos)
        << resource << ": " << result.err;
  }
  auto quota = RunProcess({DevmgrBinary(), "plugin", "fake", "--root-dir", root_.path().string(),
                           "--resource", "requests.example.com/gpu"});
  EXPECT_EQ(quota.exit_code, 2) << quota.err;
  EXPECT_NE(quota.err.find("a name beginning with requests. is a resource quota's"),
            std::string::npos)
      << quota.err;
}

class GenericPluginTest : public PluginCommandTest {
 protected:
  std::string WriteConfig(const std::string& name, const std::string& text) {
    const auto path = root_.Sub(name);
    std::ofstream(path) << text;
    return path.string();
  }
  std::vector<std::string> Generic(const std::string& config, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"plugin",
                                     "generic",
                                     "--root-dir",
                                     root_.path().string(),
                                     "--config",
                                     config,
                                     "--rescan-interval=50ms",
                                     "--check-interval=50ms"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
};

TEST_F(GenericPluginTest, ExposesRealHostDevices) {
  ASSERT_TRUE(kubelet_.Start().ok());
  const std::string config = WriteConfig("generic.yaml", R"(
namespace: devmgr.io
groups:
  - name: "null"
    paths: ["/dev/null"]
  - name: zero
    paths: ["/dev/zero"]
    count: 3
    permissions: r
    mounts:
      - {hostPath: /etc/hostname, containerPath: /etc/host-name, readOnly: true}
  - name: fuse
    paths: ["/dev/fuse"]
    count: 2
)");
  PluginProcess plugin(Generic(config, {"--cdi-dir", root_.Sub("cdi").string()}));
  ASSERT_TRUE(Seen("devmgr.io/null", 1, 1)) << plugin.err();
  ASSERT_TRUE(Seen("devmgr.io/zero", 1, 3)) << plugin.err();
  EXPECT_EQ(kubelet_.Resource("devmgr.io/zero").devices.count("zero-2"), 1u);

  auto null_device = kubelet_.Allocate("devmgr.io/null", {"null"});
  ASSERT_TRUE(null_device.ok()) << null_device.status();
  const auto& c = null_device->container_responses(0);
  ASSERT_EQ(c.devices_size(), 1);
  EXPECT_EQ(c.devices(0).host_path(), "/dev/null");
  EXPECT_EQ(c.devices(0).container_path(), "/dev/null");
  EXPECT_EQ(c.devices(0).permissions(), "rw");
  EXPECT_EQ(c.cdi_devices(0).name(), "devmgr.io/null=null");

  auto zero = kubelet_.Allocate("devmgr.io/zero", {"zero-1"});
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->container_responses(0).devices(0).permissions(), "r");
  EXPECT_TRUE(zero->container_responses(0).mounts(0).read_only());
  EXPECT_TRUE(std::filesystem::exists(root_.Sub("cdi") / "devmgr.io-zero.json"));

  if (std::filesystem::exists("/dev/fuse")) {
    ASSERT_TRUE(Seen("devmgr.io/fuse", 1, 2)) << plugin.err();
  }
  ExpectCleanExit(plugin);
  EXPECT_FALSE(std::filesystem::exists(root_.Sub("cdi") / "devmgr.io-zero.json"));
}

TEST_F(GenericPluginTest, FollowsDevicesThatComeAndGo) {
  ASSERT_TRUE(kubelet_.Start().ok());
  const auto dev = root_.Sub("dev");
  std::filesystem::create_directories(dev);
  std::ofstream(dev / "ttyUSB0") << "";
  std::ofstream(dev / "ttyUSB1") << "";
  const std::string config = WriteConfig(
      "generic.json",
      nlohmann::json{{"namespace", "example.com"},
                     {"groups", {{{"name", "serial"}, {"paths", {(dev / "ttyUSB*").string()}}}}}}
          .dump());
  PluginProcess plugin(Generic(config));
  ASSERT_TRUE(Seen("example.com/serial", 1, 2)) << plugin.err();
  auto id_of = [](std::string path) {
    path = path.substr(1);
    std::replace(path.begin(), path.end(), '/', '_');
    return path;
  };

  std::filesystem::remove(dev / "ttyUSB1");
  ASSERT_TRUE(WaitFor([&] {
    return kubelet_.Resource("example.com/serial")
               .devices[id_of((dev / "ttyUSB1").string())]
               .health == "Unhealthy";
  }));
  std::ofstream(dev / "ttyUSB2") << "";
  ASSERT_TRUE(WaitFor([&] { return kubelet_.Resource("example.com/serial").devices.size() == 3; }));
  EXPECT_EQ(
      kubelet_.Resource("example.com/serial").devices[id_of((dev / "ttyUSB2").string())].health,
      "Healthy");
  std::ofstream(dev / "ttyUSB1") << "";
  ASSERT_TRUE(WaitFor([&] {
    return kubelet_.Resource("example.com/serial")
               .devices[id_of((dev / "ttyUSB1").string())]
               .health == "Healthy";
  }));
  ExpectCleanExit(plugin);
}

// A group without cdiKind has "<namespace>/<group>": with --cdi-dir, one CDI refuses is a
// usage error naming the type; a cdiKind of the group's own serves it.
TEST_F(GenericPluginTest, AnInvalidDefaultCdiKindIsRefusedAtStartWithCdi) {
  const std::string bad = WriteConfig(
      "bad.yaml", "namespace: 3dfx.com\ngroups:\n  - {name: gpu, paths: [/dev/null]}\n");
  auto result =
      RunProcess({DevmgrBinary(), "plugin", "generic", "--root-dir", root_.path().string(),
                  "--config", bad, "--cdi-dir", root_.Sub("cdi").string()});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--cdi-dir: device type gpu would have the CDI kind \"3dfx.com/gpu\""),
            std::string::npos)
      << result.err;
  EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;

  ASSERT_TRUE(kubelet_.Start().ok());
  const std::string own = WriteConfig(
      "own.yaml",
      "namespace: 3dfx.com\ngroups:\n  - {name: gpu, paths: [/dev/null], cdiKind: tdfx.com/gpu}\n");
  PluginProcess plugin(Generic(own, {"--cdi-dir", root_.Sub("cdi").string()}));
  ASSERT_TRUE(Seen("3dfx.com/gpu", 1, 1)) << plugin.err();
  EXPECT_TRUE(WaitFor([&] { return std::filesystem::exists(root_.Sub("cdi/tdfx.com-gpu.json")); }));
  ExpectCleanExit(plugin);
}

TEST_F(GenericPluginTest, RejectsBadConfigs) {
  for (const std::string& text :
       {std::string("groups: []\n"), std::string("groups:\n  - name: x\n"),
        std::string("groups:\n  - name: x\n    paths: [/dev/null]\n"
                    "    count: 0\n"),
        std::string("groups:\n  - name: x\n    paths: [/dev/null]\n"
                    "    permissions: rwx\n"),
        std::string("{\"groups\": 5}"), std::string("[: not yaml")}) {
    auto result = RunProcess({DevmgrBinary(), "plugin", "generic", "--root-dir",
                              root_.path().string(), "--config", WriteConfig("bad.yaml", text)});
    EXPECT_EQ(result.exit_code, 2) << text << result.err;
    EXPECT_NE(result.err.find("bad.yaml"), std::string::npos) << result.err;
  }
}

// A config with `nvml` needs an NVML that loads and starts: without one the plugin would serve
// GPUs whose XID errors it cannot see. Exit 2 with NVML's reason; a config without `nvml`
// never loads the library.
TEST_F(GenericPluginTest, NvmlHealthWithoutAWorkingNvmlIsRefusedAtStart) {
  const char* fake_nvml = std::getenv("DEVMGR_FAKE_NVML");  // NOLINT(concurrency-mt-unsafe)
  ASSERT_NE(fake_nvml, nullptr) << "DEVMGR_FAKE_NVML is not set: run through meson test";
  const std::string config =
      WriteConfig("gpu.yaml", "groups:\n  - {name: gpu, paths: [/dev/null], nvml: {}}\n");
  const std::string missing = root_.Sub("libnvidia-ml.so.1").string();
  auto result = RunProcess({DevmgrBinary(), "plugin", "generic", "--root-dir",
                            root_.path().string(), "--config", config, "--nvml-library", missing});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("NVML (" + missing + ") cannot be loaded: "), std::string::npos)
      << result.err;
  EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;

  const std::string script = WriteConfig("nvml-script", "gpu 0 GPU-0\ninit-error 9\n");
  result = RunProcess({"/usr/bin/env", "FAKE_NVML_SCRIPT=" + script, DevmgrBinary(), "plugin",
                       "generic", "--root-dir", root_.path().string(), "--config", config,
                       "--nvml-library", fake_nvml});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("cannot start: nvmlInit: Driver Not Loaded"), std::string::npos)
      << result.err;

  // The same library path, with a group that does not ask for NVML: it serves.
  ASSERT_TRUE(kubelet_.Start().ok());
  PluginProcess plugin(
      Generic(WriteConfig("plain.yaml", "groups:\n  - {name: gpu, paths: [/dev/null]}\n"),
              {"--nvml-library", missing}));
  ASSERT_TRUE(Seen("devmgr.io/gpu", 1, 1)) << plugin.err();
  ExpectCleanExit(plugin);
}

TEST_F(GenericPluginTest, ConfigErrorsNameTheKeyOrBothGroups) {
  const std::string root = root_.path().string();
  struct Case {
    std::string text;
    std::vector<std::string> extra;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {"groups:\n  - name: x\n    paths: [/dev/null]\n    pathz: [/dev/zero]\n",
            {},
            "bad.yaml: groups[0]: unknown key \"pathz\""},
           // Known only once the host is looked at: two groups claim /dev/null.
           {"groups:\n  - {name: a, paths: [/dev/null]}\n  - {name: b, paths: [\"/dev/nul?\"]}\n",
            {},
            "bad.yaml: groups overlap: /dev/null is claimed by device /dev/null of group \"a\" "
            "and by device /dev/null of group \"b\""},
           {"groups:\n  - {name: a, paths: [/dev/null]}\n",
            {"--sys-root", root + "/no-sysfs"},
            "--sys-root " + root + "/no-sysfs: not a folder"},
           {"groups:\n  - {name: a, paths: [/dev/null]}\n",
            {"--proc-root", root + "/no-procfs"},
            "--proc-root " + root + "/no-procfs: not a folder"},
       }) {
    std::vector<std::string> argv = {DevmgrBinary(),
                                     "plugin",
                                     "generic",
                                     "--root-dir",
                                     root,
                                     "--config",
                                     WriteConfig("bad.yaml", c.text)};
    argv.insert(argv.end(), c.extra.begin(), c.extra.end());
    auto result = RunProcess(argv);
    EXPECT_EQ(result.exit_code, 2) << c.text << result.err;
    EXPECT_NE(result.err.find(c.error), std::string::npos) << result.err;
  }
}

}  // namespace
}  // namespace devmgr::cli
