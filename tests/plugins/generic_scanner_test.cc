// The generic plugin's scanner over fake /dev and /sys trees (tests/plugins/fake_host.h): the
// shipped NVIDIA example gives each GPU its node plus the shared control nodes and its NUMA node
// (its PCI function's, which the driver names in procfs); a node sysfs knows gets its NUMA node
// through /sys/dev/char; devices made of several nodes, per-device substitutions, the root prefix
// kept out of answers, and the errors for overlapping groups and a garbled sysfs.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/file_store.h"
#include "plugins/generic/generic_plugin.h"
#include "plugins/generic/gpu_health.h"
#include "plugins/generic/sysfs_numa.h"
#include "tests/plugins/fake_host.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::plugins {
namespace {

using deviceplugin::DeviceInfo;
using deviceplugin::DeviceNode;
using deviceplugin::DeviceTree;
using deviceplugin::Health;
using testing::ExamplePath;
using testing::FakeGpuHost;
using testing::TempDir;
using testing::WaitFor;

GenericConfig Config(const std::string& text) {
  absl::StatusOr<GenericConfig> config = ParseGenericConfig(text);
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *std::move(config) : GenericConfig{};
}

GenericConfig Example(const std::string& name) {
  absl::StatusOr<std::string> text = ReadWholeFile(ExamplePath(name));
  EXPECT_TRUE(text.ok()) << text.status();
  return Config(text.ok() ? *text : "");
}

// GpuHealth's answers, set by the test (from any thread: SetFault tells the scanner as
// XidWatch does), and the XIDs the scanner passed with its last question.
class FakeGpuHealth final : public GpuHealth {
 public:
  std::optional<std::string> Fault(unsigned int minor,
                                   const std::vector<uint64_t>& ignored_xids) const override {
    absl::MutexLock lock(&mu_);
    last_ignored_ = ignored_xids;
    auto it = faults_.find(minor);
    return it == faults_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }

  void OnChange(std::function<void()> changed) override {
    absl::MutexLock lock(&mu_);
    changed_ = std::move(changed);
  }

  // SetFault gives `minor` the fault `fault`, or none with nullopt.
  void SetFault(unsigned int minor, std::optional<std::string> fault) {
    absl::MutexLock lock(&mu_);
    if (fault.has_value()) {
      faults_[minor] = *std::move(fault);
    } else {
      faults_.erase(minor);
    }
    if (changed_) changed_();
  }

  std::vector<uint64_t> last_ignored() const {
    absl::MutexLock lock(&mu_);
    return last_ignored_;
  }

  // Someone listens for changes.
  bool listened() const {
    absl::MutexLock lock(&mu_);
    return static_cast<bool>(changed_);
  }

 private:
  mutable absl::Mutex mu_;
  std::map<unsigned int, std::string> faults_ ABSL_GUARDED_BY(mu_);
  mutable std::vector<uint64_t> last_ignored_ ABSL_GUARDED_BY(mu_);
  std::function<void()> changed_ ABSL_GUARDED_BY(mu_);
};

class GenericScannerTest : public ::testing::Test {
 protected:
  GenericScanner Scanner(GenericConfig config) {
    return GenericScanner(std::move(config), {.dev_root = host_.dev_root(),
                                              .sys_root = host_.sys_root(),
                                              .proc_root = host_.proc_root(),
                                              .gpu_health = &health_});
  }

  // MinorOf: the minor of the fake host's /dev/<gpu>, which NVML gives as the GPU's.
  unsigned int MinorOf(const std::string& gpu) const {
    struct stat st {};
    EXPECT_EQ(::stat((host_.dev_root() / "dev" / gpu).c_str(), &st), 0) << gpu;
    return minor(st.st_rdev);
  }

  void Touch(const std::string& host_path) {
    const auto path = host_.dev_root() / host_path.substr(1);
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << "";
  }

  // ExpectScanFailsNaming: a scan fails with an error that names `file`, and `text` if not empty.
  void ExpectScanFailsNaming(GenericScanner& scanner, const std::filesystem::path& file,
                             const std::string& text) {
    absl::StatusOr<DeviceTree> tree = scanner.ScanOnce();
    ASSERT_FALSE(tree.ok());
    EXPECT_NE(tree.status().message().find(file.string()), std::string::npos) << tree.status();
    EXPECT_NE(tree.status().message().find(text), std::string::npos) << tree.status();
  }

  // HealthOf: every device of a tree, "<type>/<id>", with its health.
  using HealthOf = std::map<std::string, Health>;
  HealthOf Scan(GenericScanner& scanner) {
    absl::StatusOr<DeviceTree> tree = scanner.ScanOnce();
    EXPECT_TRUE(tree.ok()) << tree.status();
    HealthOf health;
    if (!tree.ok()) return health;
    for (const auto& [type, devices] : tree->types()) {
      for (const auto& [id, info] : devices) health[absl::StrCat(type, "/", id)] = info.health;
    }
    return health;
  }

  TempDir dir_;
  FakeGpuHost host_{dir_.path()};
  // What the shipped NVIDIA example's groups ask: no GPU has a fault until a test says so.
  FakeGpuHealth health_;
};

// An optional shared node that is missing is left out, and the devices stay healthy: many
// nodes have no /dev/nvidia-uvm-tools. Before, its absence made every GPU unhealthy. A
// missing node that is not optional still does.
TEST_F(GenericScannerTest, AMissingOptionalNodeIsLeftOutAndTheDevicesStayHealthy) {
  std::filesystem::remove(host_.dev_root() / "dev/nvidia-uvm-tools");
  GenericScanner scanner = Scanner(Example("nvidia-gpu.yaml"));
  absl::StatusOr<DeviceTree> tree = scanner.ScanOnce();
  ASSERT_TRUE(tree.ok()) << tree.status();
  const DeviceInfo& gpu1 = tree->Devices("gpu").at("nvidia1");
  EXPECT_EQ(gpu1.health, Health::kHealthy);
  EXPECT_EQ(gpu1.nodes, (std::vector<DeviceNode>{{"/dev/nvidia1", "", "rw"},
                                                 {"/dev/nvidiactl", "", "rw"},
                                                 {"/dev/nvidia-uvm", "", "rw"}}));
  std::filesystem::remove(host_.dev_root() / "dev/nvidia-uvm");
  tree = scanner.ScanOnce();
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ(tree->Devices("gpu").at("nvidia1").health, Health::kUnhealthy);
}

// A folder a glob matches is no device: a runtime given a folder takes every device node under
// it. Before, /dev/dri/by-path was served as a healthy device beside renderD128.
TEST_F(GenericScannerTest, AFolderAGlobMatchesIsNoDevice) {
  Touch("/dev/dri/renderD128");
  std::filesystem::create_directories(host_.dev_root() / "dev/dri/by-path");
  GenericScanner scanner = Scanner(Config("groups:\n  - {name: render, paths: [/dev/dri/*]}\n"));
  absl::StatusOr<DeviceTree> tree = scanner.ScanOnce();
  ASSERT_TRUE(tree.ok()) << tree.status();
  const deviceplugin::DeviceMap& render = tree->Devices("render");
  ASSERT_EQ(render.size(), 1u);
  EXPECT_EQ(render.begin()->first, "dri_renderD128");
}

TEST_F(GenericScannerTest, NvidiaExampleGivesEachGpuItsNodeTheSharedNodesAndItsNumaNode) {
  GenericScanner scanner = Scanner(Example("nvidia-gpu.yaml"));
  absl::StatusOr<DeviceTree> tree = scanner.ScanOnce();
  ASSERT_TRUE(tree.ok()) << tree.status();
  const deviceplugin::DeviceMap& gpus = tree->Devices("gpu");
  ASSERT_EQ(gpus.size(), 2u);
  ASSERT_EQ(gpus.count("nvidia1"), 1u);
  const DeviceInfo& gpu1 = gpus.at("nvidia1");
  EXPECT_EQ(gpu1.health, Health::kHealthy);
  // Host paths as the host names them: the --dev-root prefix is the plugin's business only.
  EXPECT_EQ(gpu1.nodes, (std::vector<DeviceNode>{{"/dev/nvidia1", "", "rw"},
                                                 {"/dev/nvidiactl", "", "rw"},
                                                 {"/dev/nvidia-uvm", "", "rw"},
                                                 {"/dev/nvidia-uvm-tools", "", "rw"}}));
  EXPECT_EQ(gpu1.numa_nodes, std::vector<int64_t>{1});
  EXPECT_EQ(gpus.at("nvidia0").numa_nodes, std::vector<int64_t>{0});
  EXPECT_EQ(gpu1.envs.at("DEVMGR_GPU_DEVICES"), "/dev/nvidia1");
  EXPECT_EQ(gpu1.annotations.at("devmgr.io/gpu-minors"), "1");
  EXPECT_EQ(tree->DeviceTypeCount("nvidiactl"), 0u) << "shared nodes are no devices";

  // Without a control node no GPU can be used: all unhealthy until it is back.
  std::filesystem::remove(host_.dev_root() / "dev" / "nvidia-uvm");
  tree = scanner.ScanOnce();
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ(tree->HealthyCount("gpu"), 0u);
  Touch("/dev/nvidia-uvm");
  tree = scanner.ScanOnce();
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ(tree->HealthyCount("gpu"), 2u);
}

TEST_F(GenericScannerTest, SerialExampleMatchesBothKindsOfPort) {
  Touch("/dev/ttyUSB0");
  Touch("/dev/ttyACM3");
  GenericScanner scanner = Scanner(Example("serial.yaml"));
  absl::StatusOr<DeviceTree> tree = scanner.ScanOnce();
  ASSERT_TRUE(tree.ok()) << tree.status();
  const deviceplugin::DeviceMap& ports = tree->Devices("serial");
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports.at("ttyACM3").nodes, (std::vector<DeviceNode>{{"/dev/ttyACM3", "", "rw"}}));
  EXPECT_EQ(ports.at("ttyUSB0").envs.at("SERIAL_PORTS"), "/dev/ttyUSB0");
  EXPECT_TRUE(ports.at("ttyUSB0").numa_nodes.empty()) << "a plain file has no sysfs entry";
}

TEST_F(GenericScannerTest, DevicesOfSeveralNodesAndSubstitutions) {
  Touch("/dev/accel/accel0");
  Touch("/dev/accel/accel1");
  Touch("/dev/accel-ctl0");
  Touch("/dev/accel-mgmt");
  GenericScanner scanner = Scanner(Config(R"(
namespace: example.com
groups:
  - name: accel
    paths: [{path: "/dev/accel/accel*", containerPath: "/dev/accel{index}", permissions: r}]
    extraPaths: ["/dev/accel-ctl{index}"]
    sharedPaths: [/dev/accel-mgmt]
    count: 2
    env: {ACCEL_IDS: "{id}"}
)"));
  absl::StatusOr<DeviceTree> tree = scanner.ScanOnce();
  ASSERT_TRUE(tree.ok()) << tree.status();
  const deviceplugin::DeviceMap& devices = tree->Devices("accel");
  ASSERT_EQ(devices.size(), 4u);  // two devices, each for two containers
  const DeviceInfo& second = devices.at("accel_accel0-1");
  EXPECT_EQ(second.nodes, (std::vector<DeviceNode>{{"/dev/accel/accel0", "/dev/accel0", "r"},
                                                   {"/dev/accel-ctl0", "", "rw"},
                                                   {"/dev/accel-mgmt", "", "rw"}}));
  EXPECT_EQ(second.envs.at("ACCEL_IDS"), "accel_accel0-1");
  EXPECT_EQ(second.health, Health::kHealthy);
  // accel1's extra node is missing: the device is there, but not usable.
  EXPECT_EQ(devices.at("accel_accel1-0").health, Health::kUnhealthy);
}

TEST_F(GenericScannerTest, OverlappingGroupsAreRefusedNamingBothAndThePath) {
  GenericScanner twice = Scanner(Config(R"(
groups:
  - {name: gpu, paths: ["/dev/nvidia[0-9]*"]}
  - {name: everything, paths: ["/dev/nvidia*"]}
)"));
  absl::StatusOr<DeviceTree> tree = twice.ScanOnce();
  ASSERT_EQ(tree.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(tree.status().message().find("/dev/nvidia0 is claimed by device /dev/nvidia0 of "
                                         "group \"gpu\" and by device /dev/nvidia0 of group "
                                         "\"everything\""),
            std::string::npos)
      << tree.status();

  // The classic mistake: a glob that also matches the control nodes.
  GenericScanner shared = Scanner(Config(R"(
groups:
  - {name: gpu, paths: ["/dev/nvidia*"], sharedPaths: [/dev/nvidiactl]}
)"));
  tree = shared.ScanOnce();
  ASSERT_EQ(tree.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(tree.status().message().find("/dev/nvidiactl is claimed by device /dev/nvidiactl of "
                                         "group \"gpu\" and by the sharedPaths of group \"gpu\""),
            std::string::npos)
      << tree.status();

  // Two groups may share control nodes.
  GenericScanner both = Scanner(Config(R"(
groups:
  - {name: gpu0, paths: [/dev/nvidia0], sharedPaths: [/dev/nvidiactl]}
  - {name: gpu1, paths: [/dev/nvidia1], sharedPaths: [/dev/nvidiactl]}
)"));
  EXPECT_TRUE(both.ScanOnce().ok());
}

// Two paths of a group that make one ID ("/dev/serial/a" and "/dev/serial_a" are both
// "serial_a") are served once, as the one seen first: one that appears later never takes the
// ID, and with it the node a pod holding that ID gets. Before, the later one replaced the first
// in the tree, and an Allocate of the ID answered with the other device's node.
TEST_F(GenericScannerTest, TwoPathsOfOneIdServeTheOneSeenFirst) {
  Touch("/dev/serial/a");
  GenericScanner scanner = Scanner(Config(R"(
groups:
  - {name: serial, paths: ["/dev/serial/*", "/dev/serial_*"]}
)"));
  const auto node_of = [&](const std::string& id) {
    absl::StatusOr<DeviceTree> tree = scanner.ScanOnce();
    EXPECT_TRUE(tree.ok()) << tree.status();
    if (!tree.ok()) return std::string("no tree");
    const auto& devices = tree->Devices("serial");
    auto it = devices.find(id);
    if (it == devices.end()) return std::string("none");
    return absl::StrCat(it->second.nodes.at(0).host_path, " ", devices.size());
  };
  EXPECT_EQ(node_of("serial_a"), "/dev/serial/a 1");
  Touch("/dev/serial_a");
  EXPECT_EQ(node_of("serial_a"), "/dev/serial/a 1");
  EXPECT_EQ(node_of("serial_a"), "/dev/serial/a 1");
  // The first one gone: it is served unhealthy, still holding its ID.
  std::filesystem::remove(host_.dev_root() / "dev/serial/a");
  absl::StatusOr<DeviceTree> tree = scanner.ScanOnce();
  ASSERT_TRUE(tree.ok()) << tree.status();
  ASSERT_EQ(tree->Devices("serial").size(), 1u);
  EXPECT_EQ(tree->Devices("serial").at("serial_a").nodes.at(0).host_path, "/dev/serial/a");
  EXPECT_EQ(tree->Devices("serial").at("serial_a").health, Health::kUnhealthy);

  // The other order: the path of the later entry seen first keeps the ID all the same.
  std::filesystem::remove(host_.dev_root() / "dev/serial_a");
  GenericScanner other = Scanner(Config(R"(
groups:
  - {name: serial, paths: ["/dev/serial/*", "/dev/serial_*"]}
)"));
  Touch("/dev/serial_a");
  ASSERT_TRUE(other.ScanOnce().ok());
  Touch("/dev/serial/a");
  tree = other.ScanOnce();
  ASSERT_TRUE(tree.ok()) << tree.status();
  ASSERT_EQ(tree->Devices("serial").size(), 1u);
  EXPECT_EQ(tree->Devices("serial").at("serial_a").nodes.at(0).host_path, "/dev/serial_a");
  EXPECT_EQ(tree->Devices("serial").at("serial_a").health, Health::kHealthy);
}

// A device left out for its ID reads no NUMA node: a bad numa_node file of its fails no scan.
// Before, it failed every scan: the device that keeps the ID was never served.
TEST_F(GenericScannerTest, ADeviceLeftOutForItsIdReadsNoNumaNode) {
  Touch("/dev/a_nvidia1");
  std::filesystem::create_directories(host_.dev_root() / "dev/a");
  std::filesystem::create_symlink("/dev/zero", host_.dev_root() / "dev/a/nvidia1");
  std::ofstream(host_.NumaNodeFile(1)) << "spoiled\n";
  GenericScanner scanner = Scanner(Config(R"(
groups:
  - {name: gpu, paths: ["/dev/a_*", "/dev/a/*"]}
)"));
  absl::StatusOr<DeviceTree> tree = scanner.ScanOnce();
  ASSERT_TRUE(tree.ok()) << tree.status();
  ASSERT_EQ(tree->Devices("gpu").size(), 1u);
  const DeviceInfo& kept = tree->Devices("gpu").at("a_nvidia1");
  EXPECT_EQ(kept.nodes.at(0).host_path, "/dev/a_nvidia1");
  EXPECT_EQ(kept.health, Health::kHealthy);
  EXPECT_TRUE(kept.numa_nodes.empty());

  // Served, the same device's bad file still fails the scan.
  GenericScanner served = Scanner(Config("groups:\n  - {name: gpu, paths: [\"/dev/a/*\"]}\n"));
  EXPECT_EQ(served.ScanOnce().status().code(), absl::StatusCode::kFailedPrecondition);
}

// Once devices are served, a node that comes to belong to two devices (a hot-plugged port two
// groups' globs match, an optional extra node that appears) makes only the device that did not
// hold it unhealthy. Before, every later scan failed and every device was served unhealthy.
TEST_F(GenericScannerTest, GroupsThatComeToOverlapMakeOnlyTheNewClaimantUnhealthy) {
  Touch("/dev/ttyUSB0");
  Touch("/dev/gps9");
  GenericScanner scanner = Scanner(Config(R"(
groups:
  - {name: serial, paths: ["/dev/ttyUSB*"]}
  - {name: modem, paths: ["/dev/ttyUSB[3-4]"]}
  - name: gps
    paths: [/dev/gps9]
    extraPaths: [{path: "/dev/ttyUSB{index}", optional: true}]
)"));
  ASSERT_TRUE(scanner.ScanOnce().ok());
  constexpr Health kUp = Health::kHealthy;
  constexpr Health kDown = Health::kUnhealthy;

  // Both claimants are new: the first in the config keeps the port.
  Touch("/dev/ttyUSB3");
  EXPECT_EQ(Scan(scanner), (HealthOf{{"serial/ttyUSB0", kUp},
                                     {"serial/ttyUSB3", kUp},
                                     {"modem/ttyUSB3", kDown},
                                     {"gps/gps9", kUp}}));

  // A node that comes is no one's yet: of its two claimants the earlier group keeps it, and the
  // gps device, which wants it as an extra node, is served unhealthy; so at the next scan too.
  const HealthOf port_is_serials = {{"serial/ttyUSB0", kUp},
                                    {"serial/ttyUSB3", kUp},
                                    {"serial/ttyUSB9", kUp},
                                    {"modem/ttyUSB3", kDown},
                                    {"gps/gps9", kDown}};
  Touch("/dev/ttyUSB9");
  EXPECT_EQ(Scan(scanner), port_is_serials);
  EXPECT_EQ(Scan(scanner), port_is_serials);

  // The port replugged: while it is away the gps device is whole without it; when it comes
  // back it is its holder's, "serial"'s, again.
  std::filesystem::remove(host_.dev_root() / "dev/ttyUSB9");
  EXPECT_EQ(Scan(scanner), (HealthOf{{"serial/ttyUSB0", kUp},
                                     {"serial/ttyUSB3", kUp},
                                     {"serial/ttyUSB9", kDown},
                                     {"modem/ttyUSB3", kDown},
                                     {"gps/gps9", kUp}}));
  Touch("/dev/ttyUSB9");
  EXPECT_EQ(Scan(scanner), port_is_serials);

  // The ports unplugged (ttyUSB3 and ttyUSB9 away for a scan), then plugged in again: each
  // is still its holder's.
  std::filesystem::remove(host_.dev_root() / "dev/ttyUSB9");
  std::filesystem::remove(host_.dev_root() / "dev/ttyUSB3");
  ASSERT_TRUE(scanner.ScanOnce().ok());
  Touch("/dev/ttyUSB9");
  Touch("/dev/ttyUSB3");
  EXPECT_EQ(Scan(scanner), port_is_serials);

  // A device's shared node that a device of another group came to match is the shared one's:
  // the device is served unhealthy, the group that shares the node as it was.
  Touch("/dev/ttyUSBctl");
  GenericScanner shared = Scanner(Config(R"(
groups:
  - {name: serial, paths: ["/dev/ttyUSB[0-9]*"]}
  - {name: console, paths: ["/dev/ttyUSBc*"]}
  - {name: gps, paths: [/dev/gps9], sharedPaths: [{path: /dev/ttyUSBcfg, optional: true}]}
)"));
  ASSERT_TRUE(shared.ScanOnce().ok());
  Touch("/dev/ttyUSBcfg");
  absl::StatusOr<DeviceTree> tree = shared.ScanOnce();
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ(tree->Devices("console").at("ttyUSBcfg").health, kDown);
  EXPECT_EQ(tree->Devices("console").at("ttyUSBctl").health, kUp);
  EXPECT_EQ(tree->Devices("gps").at("gps9").health, kUp);
  EXPECT_EQ(tree->Devices("gps").at("gps9").nodes.size(), 2u);
}

// Contests are per node: a device that holds some node of its own does not take another node
// from that node's holder, even from a group later in the config. Here "gps" comes first; the
// port is "serial"'s before the gps device comes, and stays so when it is replugged, and when
// the gps device is unplugged whole and plugged in again.
TEST_F(GenericScannerTest, ANodesHolderKeepsItAgainstAnEarlierGroupThatHoldsAnotherNode) {
  Touch("/dev/ttyUSB9");
  GenericScanner scanner = Scanner(Config(R"(
groups:
  - name: gps
    paths: [/dev/gps9]
    extraPaths: [{path: "/dev/ttyUSB{index}", optional: true}]
  - {name: serial, paths: ["/dev/ttyUSB*"]}
)"));
  ASSERT_TRUE(scanner.ScanOnce().ok());
  const HealthOf port_is_serials = {{"serial/ttyUSB9", Health::kHealthy},
                                    {"gps/gps9", Health::kUnhealthy}};
  Touch("/dev/gps9");
  EXPECT_EQ(Scan(scanner), port_is_serials);

  std::filesystem::remove(host_.dev_root() / "dev/ttyUSB9");
  EXPECT_EQ(Scan(scanner),
            (HealthOf{{"serial/ttyUSB9", Health::kUnhealthy}, {"gps/gps9", Health::kHealthy}}));
  Touch("/dev/ttyUSB9");
  EXPECT_EQ(Scan(scanner), port_is_serials);

  std::filesystem::remove(host_.dev_root() / "dev/gps9");
  ASSERT_TRUE(scanner.ScanOnce().ok());
  std::filesystem::remove(host_.dev_root() / "dev/ttyUSB9");
  ASSERT_TRUE(scanner.ScanOnce().ok());
  Touch("/dev/ttyUSB9");
  Touch("/dev/gps9");
  EXPECT_EQ(Scan(scanner), port_is_serials);
}

// Trees notified by a running Scan, in order.
class RecordingNotifier final : public deviceplugin::Notifier {
 public:
  void Notify(DeviceTree tree) override {
    absl::MutexLock lock(&mu_);
    trees_.push_back(std::move(tree));
  }
  // The last tree's health of device `id` of `type`, if a tree came.
  std::optional<Health> LastHealth(const std::string& type, const std::string& id) {
    absl::MutexLock lock(&mu_);
    if (trees_.empty()) return std::nullopt;
    const deviceplugin::DeviceMap& devices = trees_.back().Devices(type);
    auto it = devices.find(id);
    if (it == devices.end()) return std::nullopt;
    return it->second.health;
  }

 private:
  absl::Mutex mu_;
  std::vector<DeviceTree> trees_ ABSL_GUARDED_BY(mu_);
};

// A scan that fails once running (here sysfs garbled for a while) does not end scanning: the
// devices are served unhealthy while it fails, and the next good scan serves them as they are.
TEST_F(GenericScannerTest, AScanThatFailsServesTheDevicesUnhealthyAndScanningGoesOn) {
  GenericScanner scanner(Example("nvidia-gpu.yaml"), {.dev_root = host_.dev_root(),
                                                      .sys_root = host_.sys_root(),
                                                      .proc_root = host_.proc_root(),
                                                      .rescan_interval = absl::Milliseconds(5),
                                                      .gpu_health = &health_});
  RecordingNotifier notifier;
  deviceplugin::StopToken stop;
  absl::Status scanned;
  std::thread thread([&] { scanned = scanner.Scan(notifier, stop); });
  EXPECT_TRUE(WaitFor([&] { return notifier.LastHealth("gpu", "nvidia0") == Health::kHealthy; }));
  std::ofstream(host_.NumaNodeFile(1)) << "north\n";
  EXPECT_TRUE(WaitFor([&] { return notifier.LastHealth("gpu", "nvidia0") == Health::kUnhealthy; }));
  std::ofstream(host_.NumaNodeFile(1)) << "1\n";
  EXPECT_TRUE(WaitFor([&] { return notifier.LastHealth("gpu", "nvidia0") == Health::kHealthy; }));
  stop.RequestStop();
  thread.join();
  EXPECT_TRUE(scanned.ok()) << scanned;
}

// A change GpuHealth reports wakes a running Scan: a GPU's fault is served at once, and so is its
// end, with the next rescan an hour away. Once Scan has returned it no longer listens.
TEST_F(GenericScannerTest, AGpuFaultIsServedWithoutWaitingForTheRescan) {
  GenericScanner scanner(Example("nvidia-gpu.yaml"), {.dev_root = host_.dev_root(),
                                                      .sys_root = host_.sys_root(),
                                                      .proc_root = host_.proc_root(),
                                                      .rescan_interval = absl::Hours(1),
                                                      .gpu_health = &health_});
  RecordingNotifier notifier;
  deviceplugin::StopToken stop;
  absl::Status scanned;
  std::thread thread([&] { scanned = scanner.Scan(notifier, stop); });
  EXPECT_TRUE(WaitFor([&] { return notifier.LastHealth("gpu", "nvidia1") == Health::kHealthy; }));
  health_.SetFault(MinorOf("nvidia1"), "XID 79");
  EXPECT_TRUE(WaitFor([&] { return notifier.LastHealth("gpu", "nvidia1") == Health::kUnhealthy; }));
  EXPECT_EQ(notifier.LastHealth("gpu", "nvidia0"), Health::kHealthy);
  health_.SetFault(MinorOf("nvidia1"), std::nullopt);
  EXPECT_TRUE(WaitFor([&] { return notifier.LastHealth("gpu", "nvidia1") == Health::kHealthy; }));
  stop.RequestStop();
  thread.join();
  EXPECT_TRUE(scanned.ok()) << scanned;
  EXPECT_FALSE(health_.listened());
}

TEST_F(GenericScannerTest, GarbledOrUnreadableNumaNodeIsAnErrorNamingTheFile) {
  GenericScanner scanner = Scanner(Example("nvidia-gpu.yaml"));
  std::ofstream(host_.NumaNodeFile(1)) << "north\n";
  ExpectScanFailsNaming(scanner, host_.NumaNodeFile(1), "north");

  // Unreadable, for root too: a folder where the file should be.
  std::filesystem::remove(host_.NumaNodeFile(1));
  std::filesystem::create_directory(host_.NumaNodeFile(1));
  ExpectScanFailsNaming(scanner, host_.NumaNodeFile(1), "");
}

TEST_F(GenericScannerTest, MinusOneOrNoSysfsEntryMeansNoTopology) {
  const auto numa_of = [&](const std::string& name, const std::filesystem::path& sys_root,
                           const std::filesystem::path& proc_root) {
    absl::StatusOr<std::optional<int64_t>> numa =
        NumaNodeOf(host_.dev_root() / "dev" / name, sys_root, proc_root);
    EXPECT_TRUE(numa.ok()) << numa.status();
    return numa.ok() ? *numa : std::optional<int64_t>(-2);
  };
  std::ofstream(host_.NumaNodeFile(0)) << "-1\n";
  EXPECT_EQ(numa_of("nvidia0", host_.sys_root(), host_.proc_root()), std::nullopt);
  EXPECT_EQ(numa_of("nvidia1", host_.sys_root(), host_.proc_root()), 1);
  // A GPU whose PCI function sysfs lacks; no driver in procfs; a plain file; a missing node.
  TempDir empty;
  EXPECT_EQ(numa_of("nvidia1", empty.path(), host_.proc_root()), std::nullopt);
  EXPECT_EQ(numa_of("nvidia1", host_.sys_root(), empty.path()), std::nullopt);
  EXPECT_EQ(numa_of("nvidiactl", host_.sys_root(), host_.proc_root()), std::nullopt);
  EXPECT_EQ(numa_of("nvidia7", host_.sys_root(), host_.proc_root()), std::nullopt);
}

// A node whose driver registers a device (a DRM render node, a tty) is found through
// /sys/dev/char/<major>:<minor>, and the nearest numa_node above its folder is its node.
TEST_F(GenericScannerTest, ANodeSysfsKnowsGetsTheNumaNodeOfTheNearestFolderAbove) {
  namespace fs = std::filesystem;
  const fs::path function = fs::path("devices") / "pci0000:40" / "0000:40:01.0";
  fs::create_directories(host_.sys_root() / function / "drm" / "renderD128");
  std::ofstream(host_.sys_root() / function / "numa_node") << "3\n";
  struct stat st {};
  ASSERT_EQ(::stat("/dev/full", &st), 0);
  fs::create_symlink(
      fs::path("..") / ".." / function / "drm" / "renderD128",
      host_.sys_root() / "dev" / "char" / absl::StrCat(major(st.st_rdev), ":", minor(st.st_rdev)));
  fs::create_directories(host_.dev_root() / "dev" / "dri");
  fs::create_symlink("/dev/full", host_.dev_root() / "dev" / "dri" / "renderD128");
  TempDir empty_proc;
  for (const fs::path& proc_root : {host_.proc_root(), empty_proc.path()}) {
    absl::StatusOr<std::optional<int64_t>> numa =
        NumaNodeOf(host_.dev_root() / "dev" / "dri" / "renderD128", host_.sys_root(), proc_root);
    ASSERT_TRUE(numa.ok()) << numa.status();
    EXPECT_EQ(*numa, 3) << proc_root;
  }
}

// A garbled file of the NVIDIA driver's fails the scan naming it, as a garbled numa_node does.
TEST_F(GenericScannerTest, AGarbledGpuInformationFileIsAnErrorNamingTheFile) {
  GenericScanner scanner = Scanner(Example("nvidia-gpu.yaml"));
  std::ofstream(host_.InformationFile(1)) << "Device Minor: \t five\n";
  ExpectScanFailsNaming(scanner, host_.InformationFile(1), "five");
}

// A group with `nvml` asks GpuHealth about each device's GPU by the minor of its node: a GPU
// with a fault is served unhealthy while it has it, the others as their nodes say. A node that
// is not the NVIDIA driver's, or a scanner without a GpuHealth, makes the device unhealthy.
TEST_F(GenericScannerTest, NvmlHealthServesAGpuWithAFaultUnhealthy) {
  const std::string text =
      "namespace: nvidia.com\n"
      "groups:\n"
      "  - {name: gpu, paths: [\"/dev/nvidia[0-9]*\"], nvml: {ignoredXids: [13]}}\n"
      "  - {name: ctl, paths: [/dev/nvidiactl], nvml: {}}\n";
  FakeGpuHealth& health = health_;
  GenericScanner scanner = Scanner(Config(text));
  const unsigned int nvidia1 = MinorOf("nvidia1");

  constexpr Health kUp = Health::kHealthy;
  constexpr Health kDown = Health::kUnhealthy;
  // /dev/nvidiactl of the fake host is a plain file.
  EXPECT_EQ(Scan(scanner),
            (HealthOf{{"gpu/nvidia0", kUp}, {"gpu/nvidia1", kUp}, {"ctl/nvidiactl", kDown}}));
  health.SetFault(nvidia1, "XID 79");
  EXPECT_EQ(Scan(scanner),
            (HealthOf{{"gpu/nvidia0", kUp}, {"gpu/nvidia1", kDown}, {"ctl/nvidiactl", kDown}}));
  EXPECT_EQ(health.last_ignored(), std::vector<uint64_t>{13});
  health.SetFault(nvidia1, std::nullopt);
  EXPECT_EQ(Scan(scanner),
            (HealthOf{{"gpu/nvidia0", kUp}, {"gpu/nvidia1", kUp}, {"ctl/nvidiactl", kDown}}));

  GenericScanner without(
      Config(text),
      {.dev_root = host_.dev_root(), .sys_root = host_.sys_root(), .proc_root = host_.proc_root()});
  EXPECT_EQ(Scan(without),
            (HealthOf{{"gpu/nvidia0", kDown}, {"gpu/nvidia1", kDown}, {"ctl/nvidiactl", kDown}}));
  // Without `nvml` the same nodes are healthy.
  GenericScanner plain = Scanner(
      Config("namespace: nvidia.com\ngroups:\n  - {name: gpu, paths: [\"/dev/nvidia[0-9]*\"]}\n"));
  health.SetFault(nvidia1, "XID 79");
  EXPECT_EQ(Scan(plain), (HealthOf{{"gpu/nvidia0", kUp}, {"gpu/nvidia1", kUp}}));
}

}  // namespace
}  // namespace devmgr::plugins
