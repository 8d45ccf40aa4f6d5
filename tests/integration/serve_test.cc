// `devmgr serve` end to end, run as a user runs it: the daemon, `devmgr plugin fake` and the
// client commands (`pods`, `podresources`, `checkpoint`) as separate processes in a temporary
// root. Admission, listing, run options, removal, restarts with the durable pod record, pods
// taken over from a kubelet's checkpoint, malformed manifests, refused admissions that leave
// no trace, the lock against a second daemon, topology policies, the admin socket's mode,
// SIGHUP, and a clean shutdown that leaves no socket and no process behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "common/metrics_scrape.h"
#include "nlohmann/json.hpp"
#include "tests/integration/daemon_harness.h"
#include "tests/testlib/wait_for.h"

namespace devmgr {
namespace {

using Json = nlohmann::json;
using testing::BackgroundProcess;
using testing::DaemonHarness;
using testing::ProcessResult;
using testing::WaitFor;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr char kPodManifest[] = R"(apiVersion: v1
kind: Pod
metadata:
  name: demo
  namespace: default
  uid: 6f1c1d6e-0000-4000-8000-000000000001
spec:
  initContainers:
  - name: setup
    image: busybox
    resources:
      limits:
        example.com/gpu: 1
  containers:
  - name: app
    image: busybox
    resources:
      requests:
        cpu: 100m
        example.com/gpu: "2"
      limits:
        example.com/gpu: "2"
)";
constexpr char kPodUid[] = "6f1c1d6e-0000-4000-8000-000000000001";
constexpr char kResource[] = "example.com/gpu";

class ServeTest : public ::testing::Test {
 protected:
  std::string Root() const { return h_.Root(); }

  std::unique_ptr<BackgroundProcess> StartServe(const std::vector<std::string>& extra = {}) {
    return h_.StartServe(extra);
  }

  // StartPlugin starts a fake plugin with `devices` on two NUMA nodes and waits until
  // PodResources reports them all.
  std::unique_ptr<BackgroundProcess> StartPlugin(int devices) {
    auto plugin = h_.StartPlugin(kResource, devices);
    EXPECT_TRUE(WaitFor([&] { return h_.Allocatable(kResource) == devices; }, 20s))
        << plugin->err() << " allocatable " << h_.Allocatable(kResource);
    return plugin;
  }

  int Allocatable() const { return h_.Allocatable(kResource); }
  ProcessResult Run(std::vector<std::string> args, const std::string& input = "") const {
    return h_.Run(std::move(args), input);
  }
  ProcessResult Admit(const std::string& manifest) const { return h_.Admit(manifest); }

  Json ListPods() const {
    Json pods = h_.ListPods();
    EXPECT_FALSE(pods.is_null()) << "pods list failed";
    return pods.is_null() ? Json::object() : pods;
  }

  // DeviceEntries: the devices `container` of `uid` holds (every container's when empty), as
  // pods list gives them.
  std::vector<Json> DeviceEntries(const std::string& uid, const std::string& container) const {
    std::vector<Json> entries;
    for (const auto& pod : ListPods().value("pods", Json::array())) {
      if (pod["pod"].value("uid", "") != uid) continue;
      for (const auto& c : pod.value("containers", Json::array())) {
        if (!container.empty() && c.value("containerName", "") != container) continue;
        for (const auto& resource : c.value("resources", Json::array())) {
          for (const auto& device : resource.value("devices", Json::array())) {
            entries.push_back(device);
          }
        }
      }
    }
    return entries;
  }

  // DevicesOf: the device IDs `container` of `uid` holds.
  std::vector<std::string> DevicesOf(const std::string& uid, const std::string& container) const {
    std::vector<std::string> ids;
    for (const Json& device : DeviceEntries(uid, container)) ids.push_back(device.value("id", ""));
    return ids;
  }

  // NumaNodesOf: the NUMA nodes of the devices all containers of `uid` hold (int64s are JSON
  // numbers, as Go's encoding/json writes them).
  std::set<int64_t> NumaNodesOf(const std::string& uid) const {
    std::set<int64_t> nodes;
    for (const Json& device : DeviceEntries(uid, "")) {
      for (const auto& node : device.value("numaNodes", Json::array())) {
        nodes.insert(node.get<int64_t>());
      }
    }
    return nodes;
  }

  size_t PodCount() const { return ListPods().value("pods", Json::array()).size(); }

  bool Exists(const std::string& relative) const {
    return std::filesystem::exists(h_.Path(relative));
  }

  // Stop sends SIGTERM and expects a clean exit with every socket removed.
  void Stop(BackgroundProcess& serve) const {
    DaemonHarness::Stop(serve);
    for (const char* socket :
         {"devmgr.sock", "pod-resources/kubelet.sock", "device-plugins/kubelet.sock"}) {
      EXPECT_FALSE(Exists(socket)) << socket << " left behind";
    }
  }

  Json CheckpointJson() const {
    ProcessResult shown = Run({"checkpoint", "show", "-o", "json", h_.CheckpointPath().string()});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    Json json = Json::parse(shown.out, nullptr, false);
    return json.is_discarded() ? Json::object() : json;
  }

  DaemonHarness h_;
};

TEST_F(ServeTest, AdmitListOptionsRemoveAcrossRestart) {
  auto serve = StartServe();
  auto plugin = StartPlugin(4);
  // The daemon watches plugins_registry/, and says so as a kubelet does.
  EXPECT_TRUE(Exists("device-plugins/DEPRECATION"));
  // A List before the admission: the answer PodResources keeps must not hide what follows.
  ProcessResult empty = Run({"podresources", "list", "--root-dir", Root()});
  ASSERT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_EQ(empty.out.find("demo"), std::string::npos) << empty.out;

  ProcessResult admitted = Admit(kPodManifest);
  ASSERT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_NE(admitted.out.find(std::string("pod ") + kPodUid + " admitted"), std::string::npos)
      << admitted.out;
  EXPECT_NE(admitted.out.find("app"), std::string::npos) << admitted.out;
  EXPECT_NE(admitted.out.find("env"), std::string::npos) << "the fake plugin sets an env";

  const std::vector<std::string> app_devices = DevicesOf(kPodUid, "app");
  ASSERT_EQ(app_devices.size(), 2u);
  const std::vector<std::string> setup_devices = DevicesOf(kPodUid, "setup");
  ASSERT_EQ(setup_devices.size(), 1u);
  EXPECT_NE(std::find(app_devices.begin(), app_devices.end(), setup_devices[0]), app_devices.end())
      << "an init container's device is reused by the app container";

  // PodResources lists the pod with the same devices.
  ProcessResult listed = Run({"podresources", "list", "--root-dir", Root()});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("demo"), std::string::npos) << listed.out;
  for (const auto& id : app_devices) EXPECT_NE(listed.out.find(id), std::string::npos) << id;

  ProcessResult options =
      Run({"pods", "options", "--root-dir", Root(), "-o", "json", kPodUid, "app"});
  ASSERT_EQ(options.exit_code, 0) << options.err;
  EXPECT_TRUE(Json::parse(options.out, nullptr, false).contains("options")) << options.out;
  EXPECT_EQ(Run({"pods", "options", "--root-dir", Root(), kPodUid, "nope"}).exit_code, 1);

  // Admitting the same pod again answers the same; a different pod with its UID is refused.
  EXPECT_EQ(Admit(kPodManifest).exit_code, 0);
  std::string changed = kPodManifest;
  changed.replace(changed.find("\"2\""), 3, "\"1\"");
  changed.replace(changed.find("\"2\""), 3, "\"1\"");
  ProcessResult conflict = Admit(changed);
  EXPECT_EQ(conflict.exit_code, 1) << conflict.err;
  EXPECT_NE(conflict.err.find("already admitted"), std::string::npos) << conflict.err;

  // The daemon stops cleanly; the checkpoint verifies; a restart keeps the pod and its devices
  // even though no plugin has come back yet.
  Stop(*serve);
  ProcessResult verified = Run({"checkpoint", "verify", h_.CheckpointPath().string()});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  plugin->Signal(SIGTERM);
  ASSERT_TRUE(plugin->Wait(20s).has_value());

  serve = StartServe();
  EXPECT_EQ(DevicesOf(kPodUid, "app"), app_devices);
  EXPECT_FALSE(ListPods()["pods"][0].value("recovered", false)) << "known by its record";

  ProcessResult removed = Run({"pods", "remove", "--root-dir", Root(), "-o", "json", kPodUid});
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_EQ(Json::parse(removed.out, nullptr, false).value("podUid", ""), kPodUid) << removed.out;
  EXPECT_EQ(PodCount(), 0u);
  ProcessResult relisted = Run({"podresources", "list", "--root-dir", Root()});
  ASSERT_EQ(relisted.exit_code, 0) << relisted.err;
  EXPECT_EQ(relisted.out.find("demo"), std::string::npos) << relisted.out;
  EXPECT_EQ(Run({"pods", "remove", "--root-dir", Root(), kPodUid}).exit_code, 1);
  EXPECT_TRUE(CheckpointJson().value("podDeviceEntries", Json::array()).empty())
      << "removal is durable in the checkpoint at once: " << CheckpointJson().dump();

  Stop(*serve);
  serve = StartServe();
  EXPECT_EQ(PodCount(), 0u) << "a removed pod does not come back";
  Stop(*serve);
}

TEST_F(ServeTest, RefusedAdmissionLeavesNoTrace) {
  auto serve = StartServe({"--admission-wait", "0s"});
  auto plugin = StartPlugin(2);
  // The init container gets its device, the app container cannot get 3: all is released.
  std::string greedy = kPodManifest;
  greedy.replace(greedy.find("\"2\""), 3, "\"3\"");
  greedy.replace(greedy.find("\"2\""), 3, "\"3\"");
  ProcessResult refused = Admit(greedy);
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.err.find("requested number of devices unavailable"), std::string::npos)
      << refused.err;
  EXPECT_EQ(PodCount(), 0u);
  EXPECT_EQ(Allocatable(), 2);
  EXPECT_TRUE(CheckpointJson().value("podDeviceEntries", Json::array()).empty())
      << CheckpointJson().dump();

  // Both devices are still there for the next pod.
  ProcessResult admitted = Admit(kPodManifest);
  EXPECT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_EQ(DevicesOf(kPodUid, "app").size(), 2u);
  Stop(*serve);
}

TEST_F(ServeTest, MalformedManifestsAreRefusedWithTheField) {
  auto serve = StartServe();
  const struct {
    std::string manifest;
    std::string error;
  } cases[] = {
      {"metadata: [unclosed", "YAML"},
      {"apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - name: a\n"
       "    resources:\n      limits:\n        example.com/gpu: -1\n",
       "spec.containers[0].resources.limits"},
      {"apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - name: a\n"
       "    resources:\n      limits:\n        example.com/gpu: \"1.5\"\n",
       "spec.containers[0].resources.limits"},
      {"apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - name: a\n"
       "  - name: a\n",
       "spec.containers[1].name"},
      {"apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - image: b\n",
       "spec.containers[0].name"},
      {"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: a\n", "metadata"},
      {"apiVersion: v1\nkind: Pod\nmetadata:\n  namespace: x\nspec:\n  containers:\n  - name: a\n",
       "metadata.name"},
  };
  for (const auto& c : cases) {
    ProcessResult result = Admit(c.manifest);
    EXPECT_EQ(result.exit_code, 2) << c.manifest << result.err;
    EXPECT_NE(result.err.find(c.error), std::string::npos) << c.manifest << " -> " << result.err;
  }
  ProcessResult missing = Run({"pods", "admit", "--root-dir", Root(), Root() + "/no-such-file"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(PodCount(), 0u);
  Stop(*serve);
}

TEST_F(ServeTest, GeneratedUidIsReported) {
  auto serve = StartServe();
  ProcessResult admitted = Admit(
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: nouid\nspec:\n  containers:\n  - name: a\n");
  ASSERT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_NE(admitted.err.find("generated"), std::string::npos) << admitted.err;
  Json pods = ListPods();
  ASSERT_EQ(pods["pods"].size(), 1u);
  const std::string uid = pods["pods"][0]["pod"].value("uid", "");
  EXPECT_NE(admitted.err.find(uid), std::string::npos) << uid << " / " << admitted.err;
  Stop(*serve);
}

TEST_F(ServeTest, SecondDaemonOnTheSameRootRefusesToStart) {
  auto serve = StartServe();
  ProcessResult second = Run({"serve", "--root-dir", Root()});
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.err.find("another devmgr serve"), std::string::npos) << second.err;
  // The first daemon still serves.
  EXPECT_EQ(PodCount(), 0u);
  EXPECT_TRUE(Exists("devmgr.sock"));
  Stop(*serve);
}

// A root that cannot be one is bad usage (2), not "held" (1): ENOTDIR and ELOOP are
// FailedPrecondition as a held root is, and were answered 1 before.
TEST_F(ServeTest, ARootThatIsAFileIsAUsageError) {
  const std::filesystem::path file = h_.Path("a-file");
  std::ofstream(file) << "";
  ProcessResult refused = Run({"serve", "--root-dir", file.string()});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("Not a directory"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find('\n'), refused.err.size() - 1) << refused.err;
}

TEST_F(ServeTest, ADaemonWithoutAClusterNeverLoadsLibcurl) {
  // libcurl and the libraries it brings are loaded by the first Kubernetes API client
  // (kubeclient/curl_library.h): a node without a cluster does not map them at every start.
  // ClusterTest.ANodeAndItsDriverWorkWithTheClustersClaimsAndSlices sees them loaded.
  auto serve = StartServe();
  ASSERT_NE(serve, nullptr);
  const pid_t pid = h_.DaemonPid();
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(DaemonHarness::MapsLibrary(pid, "libgrpc")) << "the check reads the daemon's maps";
  EXPECT_FALSE(DaemonHarness::MapsLibrary(pid, "libcurl"));
  Stop(*serve);
}

TEST_F(ServeTest, AdminSocketIsOwnerOnly) {
  auto serve = StartServe();
  struct stat info {};
  ASSERT_EQ(::stat(h_.Path("devmgr.sock").c_str(), &info), 0);
  EXPECT_TRUE(S_ISSOCK(info.st_mode));
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  Stop(*serve);
}

TEST_F(ServeTest, PodsOfAKubeletCheckpointAreKeptUntilRemoved) {
  // A checkpoint written by a kubelet (pod "kubelet-pod", container "con1", dev1 and dev2).
  std::filesystem::create_directories(h_.Path("device-plugins"));
  std::ofstream(h_.CheckpointPath())
      << R"({"Data":{"PodDeviceEntries":[{"PodUID":"pod1","ContainerName":"con1",)"
      << R"("ResourceName":"example.com/gpu","DeviceIDs":{"-1":["dev9"],"0":["dev1","dev2"],)"
      << R"("1":["dev3"]},"AllocResp":"CgYKAUESATE="}],"RegisteredDevices":{"a.io/x":[],)"
      << R"("example.com/gpu":["dev1","dev2","dev3","dev9"]}},"Checksum":2549016347})";
  auto serve = StartServe();
  Json pods = ListPods();
  ASSERT_EQ(pods["pods"].size(), 1u) << pods.dump();
  EXPECT_TRUE(pods["pods"][0].value("recovered", false));
  EXPECT_EQ(DevicesOf("pod1", "con1").size(), 4u);
  ProcessResult table = Run({"pods", "list", "--root-dir", Root()});
  EXPECT_NE(table.out.find("recovered"), std::string::npos) << table.out;

  // Its run options come from the checkpoint's cached Allocate response (env A=1).
  ProcessResult options = Run({"pods", "options", "--root-dir", Root(), "pod1", "con1"});
  EXPECT_EQ(options.exit_code, 0) << options.err;
  EXPECT_NE(options.out.find("A=1"), std::string::npos) << options.out;

  Stop(*serve);
  serve = StartServe();
  EXPECT_EQ(PodCount(), 1u) << "still kept after a restart";
  ProcessResult removed = Run({"pods", "remove", "--root-dir", Root(), "pod1"});
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_EQ(removed.out, "pod pod1 removed\n");
  Stop(*serve);
  serve = StartServe();
  EXPECT_EQ(PodCount(), 0u);
  Stop(*serve);
}

TEST_F(ServeTest, SingleNumaNodePolicyAlignsOrRefuses) {
  const std::filesystem::path metrics = h_.Path("metrics.sock");
  auto serve = StartServe({"--topology-policy", "single-numa-node", "--admission-wait", "0s",
                           "--metrics-address", "unix:" + metrics.string()});
  auto plugin = StartPlugin(4);  // two devices on each NUMA node
  const std::string two =
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: two\n  uid: two\nspec:\n  containers:\n"
      "  - name: a\n    resources:\n      limits:\n        example.com/gpu: 2\n";
  ASSERT_EQ(Admit(two).exit_code, 0);
  EXPECT_EQ(NumaNodesOf("two").size(), 1u) << ListPods().dump();

  // Three devices cannot fit on one node: refused with upstream's text, nothing kept.
  const std::string three =
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: three\n  uid: three\nspec:\n  containers:\n"
      "  - name: a\n    resources:\n      limits:\n        example.com/gpu: 2\n  - name: b\n"
      "    resources:\n      limits:\n        example.com/gpu: 1\n";
  ProcessResult refused = Admit(three);
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.err.find("Resources cannot be allocated with Topology locality"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(PodCount(), 1u);

  // Upstream's topology manager metrics: two admissions, one failed; in container scope each
  // container aligned is counted (the refused pod's first one too) and the one refused.
  absl::StatusOr<std::string> text = ScrapeMetrics(metrics);
  ASSERT_TRUE(text.ok()) << text.status();
  for (const char* line : {
           "kubelet_topology_manager_admission_requests_total 2",
           "kubelet_topology_manager_admission_errors_total 1",
           "kubelet_topology_manager_admission_duration_ms_count 2",
           "kubelet_container_aligned_compute_resources_count{boundary=\"numa_node\","
           "scope=\"container\"} 2",
           "kubelet_container_aligned_compute_resources_failure_count{boundary=\"numa_node\","
           "scope=\"container\"} 1",
           "kubelet_container_aligned_compute_resources_count{boundary=\"numa_node\","
           "scope=\"pod\"} 0",
       }) {
    EXPECT_TRUE(absl::StrContains(*text, absl::StrCat(line, "\n"))) << line << "\n" << *text;
  }
  Stop(*serve);
}

// --topology-scope pod (upstream's pod scope) aligns a pod's containers together. With one of
// node 0's two devices taken, a pod of two one-device containers fits only on node 1; in
// container scope its first container would take node 0's last device and the second node 1's.
TEST_F(ServeTest, PodScopePutsAllOfAPodsContainersOnOneNode) {
  const std::filesystem::path metrics = h_.Path("metrics.sock");
  auto serve =
      StartServe({"--topology-policy", "single-numa-node", "--topology-scope", "pod",
                  "--admission-wait", "0s", "--metrics-address", "unix:" + metrics.string()});
  auto plugin = StartPlugin(4);  // two devices on each NUMA node
  const std::string one =
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: one\n  uid: one\nspec:\n  containers:\n"
      "  - name: a\n    resources:\n      limits:\n        example.com/gpu: 1\n";
  ASSERT_EQ(Admit(one).exit_code, 0);
  ASSERT_EQ(NumaNodesOf("one"), (std::set<int64_t>{0})) << ListPods().dump();

  const std::string pair =
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pair\n  uid: pair\nspec:\n  containers:\n"
      "  - name: a\n    resources:\n      limits:\n        example.com/gpu: 1\n  - name: b\n"
      "    resources:\n      limits:\n        example.com/gpu: 1\n";
  ProcessResult admitted = Admit(pair);
  ASSERT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_EQ(NumaNodesOf("pair"), (std::set<int64_t>{1})) << ListPods().dump();

  // One device is left, on node 0: a pod of two one-device containers is refused, and nothing
  // is kept.
  const std::string rest =
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: rest\n  uid: rest\nspec:\n  containers:\n"
      "  - name: a\n    resources:\n      limits:\n        example.com/gpu: 1\n  - name: b\n"
      "    resources:\n      limits:\n        example.com/gpu: 1\n";
  ProcessResult refused = Admit(rest);
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.err.find("Resources cannot be allocated with Topology locality"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(PodCount(), 2u);

  // In pod scope each pod is counted once.
  absl::StatusOr<std::string> text = ScrapeMetrics(metrics);
  ASSERT_TRUE(text.ok()) << text.status();
  for (const char* line : {
           "kubelet_topology_manager_admission_requests_total 3",
           "kubelet_topology_manager_admission_errors_total 1",
           "kubelet_container_aligned_compute_resources_count{boundary=\"numa_node\","
           "scope=\"pod\"} 2",
           "kubelet_container_aligned_compute_resources_failure_count{boundary=\"numa_node\","
           "scope=\"pod\"} 1",
           "kubelet_container_aligned_compute_resources_count{boundary=\"numa_node\","
           "scope=\"container\"} 0",
       }) {
    EXPECT_TRUE(absl::StrContains(*text, absl::StrCat(line, "\n"))) << line << "\n" << *text;
  }
  Stop(*serve);
}

TEST_F(ServeTest, SighupReopensTheLogFile) {
  const std::filesystem::path log = h_.Path("serve.log");
  auto serve = StartServe({"--log-file", log.string()});
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(log); }));
  std::filesystem::rename(log, h_.Path("serve.log.1"));
  serve->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(log); })) << "reopened on SIGHUP";
  Stop(*serve);
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("devmgr stopped"), std::string::npos) << text;
}

// Every line the daemon and a plugin log is klog's: level, date and time, process ID,
// file:line, then the quoted message (a multi-line value continues on lines that start with a
// tab, ended by " >"); -v 4 is the kubelet's debug verbosity.
TEST_F(ServeTest, LogsAreKlogLinesWithTheirSource) {
  const std::filesystem::path log = h_.Path("serve.log");
  auto serve = StartServe({"--log-file", log.string(), "-v", "4"});
  auto plugin = h_.StartPlugin(kResource, 2, {"--v", "4"});
  ASSERT_TRUE(WaitFor([&] { return Allocatable() == 2; }, 20s)) << plugin->err();
  Stop(*serve);
  DaemonHarness::Stop(*plugin);

  const std::regex header(R"([IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ [a-z0-9_]+\.cc:\d+\] ".*)");
  auto check = [&](const std::string& who, const std::string& text) {
    int lines = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (absl::StartsWith(line, "\t") || line == " >" || absl::StartsWith(line, " > ")) continue;
      EXPECT_TRUE(std::regex_match(line, header)) << who << ": " << line;
      ++lines;
    }
    EXPECT_GT(lines, 0) << who;
  };
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  check("devmgr serve", text);
  check("devmgr plugin fake", plugin->err());
  EXPECT_NE(text.find("Device plugin connected"), std::string::npos) << text;

  ProcessResult both = Run({"serve", "--root-dir", Root(), "--log-level", "debug", "-v", "4"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--log-level and -v"), std::string::npos) << both.err;
  // Given is given, whatever the value (the default level beside -v was taken before).
  ProcessResult default_level =
      Run({"serve", "--root-dir", Root(), "-v", "3", "--log-level", "info"});
  EXPECT_EQ(default_level.exit_code, 2);
  EXPECT_NE(default_level.err.find("--log-level and -v"), std::string::npos) << default_level.err;
  // The kubelet's spelling, -v=3, is taken too (it was "Could not convert: --v = =3").
  ProcessResult kubelet_style = Run({"serve", "--root-dir", Root(), "-v=3", "--log-level", "info"});
  EXPECT_EQ(kubelet_style.exit_code, 2);
  EXPECT_NE(kubelet_style.err.find("--log-level and -v"), std::string::npos) << kubelet_style.err;
  ProcessResult negative = Run({"serve", "--root-dir", Root(), "-v", "-1"});
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_NE(negative.err.find("-v: must be 0 or more"), std::string::npos) << negative.err;
  // The levels it names are those it takes: off among them.
  ProcessResult loud = Run({"serve", "--root-dir", Root(), "--log-level", "loud"});
  EXPECT_EQ(loud.exit_code, 2);
  EXPECT_NE(loud.err.find("unknown level \"loud\"; want trace, debug, info, warn, error or off"),
            std::string::npos)
      << loud.err;
}

// Started by systemd as a Type=notify service (a datagram socket stands in for systemd):
// READY=1 once its sockets listen, WATCHDOG=1 at half of WatchdogSec, STOPPING=1 on SIGTERM.
TEST_F(ServeTest, TellsSystemdWhenItIsReadyAliveAndStopping) {
  const std::filesystem::path notify = h_.Path("notify.sock");
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, notify.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  std::vector<std::string> received;
  auto drain = [&] {
    char buffer[512];
    for (ssize_t n; (n = ::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT)) > 0;) {
      received.emplace_back(buffer, static_cast<size_t>(n));
    }
  };
  auto count = [&](const std::string& prefix) {
    drain();
    return std::count_if(received.begin(), received.end(),
                         [&](const std::string& m) { return absl::StartsWith(m, prefix); });
  };

  ::setenv("NOTIFY_SOCKET", notify.c_str(), 1);
  ::setenv("WATCHDOG_USEC", "200000", 1);  // a sign of life every 0.1 s
  auto serve = StartServe();
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");
  ASSERT_NE(serve, nullptr);
  ASSERT_TRUE(WaitFor([&] { return count("READY=1") == 1; }, 20s));
  EXPECT_TRUE(Exists("devmgr.sock"));
  EXPECT_TRUE(Exists("pod-resources/kubelet.sock"));
  EXPECT_TRUE(Exists("device-plugins/kubelet.sock"));
  EXPECT_TRUE(WaitFor([&] { return count("WATCHDOG=1") >= 3; }, 20s));
  EXPECT_EQ(count("STOPPING=1"), 0);

  Stop(*serve);
  EXPECT_TRUE(WaitFor([&] { return count("STOPPING=1") == 1; }, 5s));
  EXPECT_EQ(count("READY=1"), 1);
  ::close(fd);
}

TEST_F(ServeTest, MetricsWithUpstreamNames) {
  const std::filesystem::path socket = h_.Path("metrics.sock");
  auto serve = StartServe({"--metrics-address", "unix:" + socket.string()});
  auto plugin = StartPlugin(2);
  ASSERT_EQ(Admit(kPodManifest).exit_code, 0);
  std::string greedy = kPodManifest;
  greedy.replace(greedy.find("uid: "), 5, "uid: x");
  EXPECT_EQ(Admit(greedy).exit_code, 1) << "no devices left";
  std::string changed = kPodManifest;
  changed.replace(changed.find("\"2\""), 3, "\"1\"");
  changed.replace(changed.find("\"2\""), 3, "\"1\"");
  EXPECT_EQ(Admit(changed).exit_code, 1) << "its UID is admitted with other containers";

  struct stat info {};
  ASSERT_EQ(::stat(socket.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  absl::StatusOr<std::string> scraped = ScrapeMetrics(socket);
  ASSERT_TRUE(scraped.ok()) << scraped.status();
  const std::string& text = *scraped;
  for (const char* line : {
           "kubelet_device_plugin_registration_total{resource_name=\"example.com/gpu\"} 1",
           "kubelet_device_plugin_alloc_duration_seconds_count{resource_name=\"example.com/gpu\"} "
           "2",
           "kubelet_pod_resources_endpoint_requests_total{server_api_version=\"v1\"}",
           "devmgr_device_plugin_endpoint_state{resource_name=\"example.com/"
           "gpu\",state=\"running\"} 1",
           "devmgr_device_plugin_devices{health=\"healthy\",resource_name=\"example.com/gpu\"} 2",
           "devmgr_admissions_refused_total{reason=\"not_enough_devices\"} 1",
           "devmgr_admissions_refused_total{reason=\"already_admitted\"} 1",
           // Every admission goes through the topology manager; under policy none a failed
           // allocation is no alignment error, as upstream.
           "kubelet_topology_manager_admission_requests_total 2",
           "kubelet_topology_manager_admission_errors_total 0",
           "devmgr_checkpoint_write_duration_seconds_count",
           "process_start_time_seconds ",
           "devmgr_build_info{",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  // The kubelet's health endpoints beside /metrics: live, and ready once serve has started.
  for (const char* path : {"/healthz", "/readyz"}) {
    absl::StatusOr<HttpAnswer> answer = HttpGetUnix(socket, path);
    ASSERT_TRUE(answer.ok()) << path << ": " << answer.status();
    EXPECT_EQ(answer->status, 200) << path << ": " << answer->body;
    EXPECT_EQ(answer->body, "ok") << path;
  }
  Stop(*serve);
  EXPECT_FALSE(std::filesystem::exists(socket));
}

TEST_F(ServeTest, BadFlagsAreUsageErrors) {
  for (const auto& flag : std::vector<std::vector<std::string>>{{"--endpoint-grace", "soon"},
                                                                {"--topology-policy", "strict"},
                                                                {"--topology-scope", "node"},
                                                                {"--log-level", "loud"},
                                                                {"--max-message-bytes", "100"},
                                                                {"--podresources-qps", "-5"},
                                                                {"--podresources-qps", "nan"},
                                                                {"--podresources-burst", "0"},
                                                                {"--kube-api-qps", "-1"},
                                                                {"--kube-api-burst", "-1"},
                                                                {"--numa-nodes", "3-1"},
                                                                {"--node-name", ""},
                                                                {"--node-name", "Bad_Node"},
                                                                {"--node-label", "Bad Key=v"},
                                                                {"--node-label", "k=bad value"}}) {
    std::vector<std::string> args = {"serve", "--root-dir", Root()};
    args.insert(args.end(), flag.begin(), flag.end());
    ProcessResult result = Run(args);
    EXPECT_EQ(result.exit_code, 2) << flag[0] << ": " << result.err;
    EXPECT_NE(result.err.find(flag[0]), std::string::npos) << result.err;
  }
  // Device classes the node could not read are refused before it starts.
  ProcessResult classes = Run({"serve", "--root-dir", Root(), "--device-classes", "/nowhere"});
  EXPECT_EQ(classes.exit_code, 2) << classes.err;
  EXPECT_EQ(classes.err, "devmgr: device classes /nowhere: No such file or directory\n");
  EXPECT_FALSE(Exists("devmgr.sock"));
}

// Nine NUMA nodes with a topology policy: the daemon refuses to start, as the kubelet (its
// max-allowable-numa-nodes of 8), and says why.
TEST_F(ServeTest, MoreThanEightNumaNodesWithATopologyPolicyFailStart) {
  ProcessResult result = Run(
      {"serve", "--root-dir", Root(), "--topology-policy", "best-effort", "--numa-nodes", "0-8"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("unsupported on machines with more than 8 NUMA Nodes"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(Exists("devmgr.sock"));
}

// The policy option max-allowable-numa-nodes raises the limit, as the kubelet's.
TEST_F(ServeTest, MaxAllowableNumaNodesLetsALargerMachineStart) {
  auto serve = StartServe({"--topology-policy", "best-effort", "--numa-nodes", "0-8",
                           "--topology-policy-options", "max-allowable-numa-nodes=9"});
  Stop(*serve);
}

// prefer-closest-numa-nodes reads the distances between the NUMA nodes from sysfs at start, of
// the nodes --numa-nodes names or else of the machine's online nodes: a node sysfs does not
// describe fails the start. The options are checked only for a policy other than none, as the
// kubelet's; their syntax always.
TEST_F(ServeTest, PreferClosestNumaNodesReadsTheMachinesDistances) {
  // Node 63 is past any machine this runs on.
  ProcessResult unknown_node =
      Run({"serve", "--root-dir", Root(), "--topology-policy", "best-effort", "--numa-nodes", "63",
           "--topology-policy-options", "prefer-closest-numa-nodes=true"});
  EXPECT_EQ(unknown_node.exit_code, 2) << unknown_node.err;
  EXPECT_NE(unknown_node.err.find("node63/distance"), std::string::npos) << unknown_node.err;
  for (const char* option : {"prefer-closest-numa-nodes=maybe", "max-allowable-numa-nodes=4"}) {
    ProcessResult bad = Run({"serve", "--root-dir", Root(), "--topology-policy", "restricted",
                             "--topology-policy-options", option});
    EXPECT_EQ(bad.exit_code, 2) << option << ": " << bad.err;
    EXPECT_NE(bad.err.find("--topology-policy-options: "), std::string::npos) << bad.err;
  }
  ProcessResult malformed = Run(
      {"serve", "--root-dir", Root(), "--topology-policy-options", "prefer-closest-numa-nodes"});
  EXPECT_EQ(malformed.exit_code, 2) << malformed.err;
  EXPECT_NE(malformed.err.find("malformed pair, expect string=string"), std::string::npos)
      << malformed.err;
  EXPECT_FALSE(Exists("devmgr.sock"));

  auto ignored = StartServe({"--topology-policy-options", "full-pcpus-only=true"});
  Stop(*ignored);
  if (!std::filesystem::exists("/sys/devices/system/node/node0/distance")) {
    GTEST_SKIP() << "this machine's sysfs describes no NUMA node";
  }
  // The flag given twice: the later value of a name wins.
  auto serve = StartServe({"--topology-policy", "best-effort", "--topology-policy-options",
                           "prefer-closest-numa-nodes=false", "--topology-policy-options",
                           "prefer-closest-numa-nodes=true"});
  Stop(*serve);
}

}  // namespace
}  // namespace devmgr
