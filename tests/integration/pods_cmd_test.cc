// `devmgr pods admit|list|options` and `podresources allocatable` against a real daemon and a
// fake plugin, run as a user runs them: every -o format through the one printer, failures that
// name their gRPC code, and a pod asking for resources no device plugin serves.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "tests/integration/daemon_harness.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::testing {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr char kGpu[] = "example.com/gpu";

// A pod whose container asks for CPU, memory and `extended` (resource: count lines).
std::string PodAsking(const std::string& uid, const std::string& extended) {
  return absl::StrCat(
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ", uid, "\n  namespace: ml\n  uid: ", uid,
      "\nspec:\n  containers:\n  - name: c\n    resources:\n      limits:\n        cpu: \"1\"\n"
      "        memory: 1Gi\n",
      extended);
}

// Headers: the words of a table's first line.
std::vector<std::string> Headers(const std::string& table) {
  return absl::StrSplit(table.substr(0, table.find('\n')), ' ', absl::SkipEmpty());
}

class PodsCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    serve_ = h_.StartServe({"--admission-wait", "0s"});
    ASSERT_NE(serve_, nullptr);
  }

  // StartGpus starts a fake plugin with two devices, one on each of NUMA nodes 0 and 1.
  void StartGpus() {
    plugin_ = h_.StartPlugin(kGpu, 2);
    ASSERT_TRUE(WaitFor([&] { return h_.Allocatable(kGpu) == 2; }, 20s));
  }

  ProcessResult Pods(std::vector<std::string> args, const std::string& input = "") const {
    args.insert(args.begin(), "pods");
    args.push_back("--root-dir");
    args.push_back(h_.Root());
    return h_.Run(args, input);
  }

  DaemonHarness h_;
  std::unique_ptr<BackgroundProcess> serve_;
  std::unique_ptr<BackgroundProcess> plugin_;
};

// Upstream's allocateContainerResources skips a resource no plugin serves
// (`if !m.isDevicePluginResource(resource) { continue }`): the pod is admitted, and `admit`
// says on stderr which resources those were.
TEST_F(PodsCommandTest, AdmitsResourcesNoPluginServesAndSaysWhich) {
  const ProcessResult admitted = h_.Admit(PodAsking("none", "        vendor.com/none: 1\n"));
  EXPECT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_EQ(admitted.err,
            "devmgr: not device-plugin resources, admitted without devices: vendor.com/none\n");
  EXPECT_NE(admitted.out.find("pod none admitted"), std::string::npos) << admitted.out;
  EXPECT_EQ(h_.PodDevices()["none"], std::vector<std::string>());

  // The admin API answers them too: the same pod again, as JSON.
  const ProcessResult json =
      Pods({"admit", "-o", "json", "-"}, PodAsking("none", "        vendor.com/none: 1\n"));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const Json answer = Json::parse(json.out, nullptr, false);
  ASSERT_FALSE(answer.is_discarded()) << json.out;
  EXPECT_EQ(answer["nonDevicePluginResources"], Json({"vendor.com/none"})) << json.out;

  // CPU and memory are no extended resources: nothing to say.
  const ProcessResult plain = h_.Admit(PodAsking("plain", ""));
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.err, "");
}

TEST_F(PodsCommandTest, OnlyTheResourcesNoPluginServesAreNamed) {
  StartGpus();
  const ProcessResult admitted =
      h_.Admit(PodAsking("mixed",
                         "        example.com/gpu: 1\n        vendor.com/none: 2\n        "
                         "vendor.com/zero: 0\n"));
  EXPECT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_EQ(admitted.err,
            "devmgr: not device-plugin resources, admitted without devices: vendor.com/none\n");
  EXPECT_EQ(h_.PodDevices()["mixed"].size(), 1u);

  // The counts the pod asked for: a protobuf map, printed in key order as Go prints maps.
  const ProcessResult json = Pods({"list", "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const size_t gpu = json.out.find("\"example.com/gpu\": 1");
  const size_t none = json.out.find("\"vendor.com/none\": 2");
  const size_t zero = json.out.find("\"vendor.com/zero\": 0");
  ASSERT_NE(zero, std::string::npos) << json.out;
  EXPECT_TRUE(gpu < none && none < zero) << json.out;
}

TEST_F(PodsCommandTest, RefusalNamesTheGrpcCode) {
  StartGpus();
  const ProcessResult refused = h_.Admit(PodManifest("greedy", kGpu, 3));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("AdmitPod failed: requested number of devices unavailable"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find(" (RESOURCE_EXHAUSTED)\n"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find("(code"), std::string::npos) << refused.err;

  const ProcessResult missing = Pods({"options", "no-such-pod", "c"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("(NOT_FOUND)"), std::string::npos) << missing.err;
}

// An admission still under way when the client's --timeout passes is no refusal: the daemon
// goes on with it, so `admit` says it had no answer (exit 2) instead of "refused, nothing
// changed" (exit 1, as it said before), and the pod is admitted once the plugin answers.
TEST_F(PodsCommandTest, AnAdmissionStillUnderWayAtTheTimeoutIsNoRefusal) {
  plugin_ = h_.StartPlugin(kGpu, 2, {"--allocate-latency", "3s"});
  ASSERT_TRUE(WaitFor([&] { return h_.Allocatable(kGpu) == 2; }, 20s));
  const ProcessResult late = Pods({"admit", "--timeout", "1s", "-"}, PodManifest("late", kGpu, 1));
  EXPECT_EQ(late.exit_code, 2) << late.err;
  EXPECT_EQ(late.err,
            "devmgr: AdmitPod: no answer from the daemon within --timeout (DEADLINE_EXCEEDED); it "
            "goes on with the call, and one that changes the node may still take effect: "
            "`devmgr pods list` shows what the node holds\n");
  EXPECT_TRUE(WaitFor([&] { return h_.PodDevices()["late"].size() == 1; }, 20s));
}

// A manifest the daemon would not read (over gRPC's 4 MiB) is bad input, said before it is sent
// (it was the daemon's RESOURCE_EXHAUSTED, exit 1, as if refused).
TEST_F(PodsCommandTest, AManifestOverTheLimitIsBadInput) {
  const std::string big = PodManifest("big", kGpu, 1) + "# " + std::string(5 << 20, 'x') + "\n";
  const ProcessResult result = Pods({"admit", "-"}, big);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.err,
            "devmgr: the manifest is more than 4194240 bytes, the most the daemon reads\n");
}

// A manifest that is not UTF-8 is bad input, said before it is sent: a Kubernetes object is
// UTF-8 text, and the request's field must be. Before, protobuf logged its own error, the call
// failed as INTERNAL and the command exited 1, as if the daemon had refused the pod.
TEST_F(PodsCommandTest, AManifestThatIsNotUtf8IsBadInput) {
  std::string manifest = PodManifest("bad", kGpu, 1);
  manifest.replace(manifest.find("bad"), 3,
                   "b\xff"
                   "d");
  const ProcessResult result = Pods({"admit", "-"}, manifest);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.err, absl::StrCat("devmgr: the manifest on stdin is not UTF-8 text at byte ",
                                     manifest.find('\xff'), "\n"));
  EXPECT_TRUE(h_.PodDevices().empty());
}

// A manifest on stdin is read up to the limit, not to its end: a stream without end is refused
// as too large instead of filling the memory (it was read whole, and the process aborted).
TEST_F(PodsCommandTest, AManifestOnAnEndlessStdinIsBadInput) {
  const ProcessResult result = RunProcess(
      {"/bin/sh", "-c", absl::StrCat("exec \"$0\" pods admit --root-dir \"$1\" - < /dev/zero"),
       DevmgrBinary(), h_.Root()});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.err,
            "devmgr: the manifest is more than 4194240 bytes, the most the daemon reads\n");
}

// Output that cannot be written (a full disk; a pipe whose reader went away, with SIGPIPE
// ignored as under systemd) fails the command: a script must not take a cut answer for a whole
// one, and a watch must not write into nothing for ever. Before, both exited 0, and the watch
// never ended.
TEST_F(PodsCommandTest, OutputThatCannotBeWrittenIsAFailure) {
  StartGpus();
  ASSERT_EQ(h_.Admit(PodManifest("one", kGpu, 1)).exit_code, 0);
  const std::string failed =
      "devmgr: cannot write the output (a full disk, or a reader that went away)\n";
  const ProcessResult listed =
      RunProcess({"/bin/sh", "-c", "exec \"$0\" pods list --root-dir \"$1\" -o json > /dev/full",
                  DevmgrBinary(), h_.Root()});
  EXPECT_EQ(listed.exit_code, 2) << listed.err;
  EXPECT_EQ(listed.err, failed);
  // The watch's first event (the pod's snapshot) cannot be written.
  BackgroundProcess watch({"/bin/sh", "-c",
                           "exec \"$0\" podresources watch --root-dir \"$1\" -o json > /dev/full",
                           DevmgrBinary(), h_.Root()});
  const std::optional<int> watched = watch.Wait(20000ms);
  ASSERT_TRUE(watched.has_value()) << "the watch did not end";
  EXPECT_EQ(*watched, 2) << watch.err();
  EXPECT_EQ(watch.err(), failed);
}

// A timeout too long for the system clock to count to waits without end: it failed at once,
// saying the daemon had not answered within it.
TEST_F(PodsCommandTest, AHugeTimeoutIsNoTimeout) {
  const ProcessResult listed = Pods({"list", "--timeout", "9999999999999h"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  const ProcessResult resources =
      h_.Run({"podresources", "list", "--root-dir", h_.Root(), "--timeout", "9999999999999h"});
  EXPECT_EQ(resources.exit_code, 0) << resources.err;
}

TEST_F(PodsCommandTest, ListInEveryFormat) {
  StartGpus();
  ASSERT_EQ(h_.Admit(PodManifest("one", kGpu, 1)).exit_code, 0);

  // JSON: the counts the pod asked for and the NUMA nodes are numbers; defaults are printed.
  const ProcessResult json = Pods({"list", "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const Json listed = Json::parse(json.out, nullptr, false);
  ASSERT_FALSE(listed.is_discarded()) << json.out;
  const Json& pod = listed["pods"][0];
  EXPECT_EQ(pod["pod"]["containers"][0]["devices"][kGpu], 1) << json.out;
  EXPECT_EQ(pod["recovered"], false) << json.out;
  const Json& device = pod["containers"][0]["resources"][0]["devices"][0];
  ASSERT_EQ(device["numaNodes"].size(), 1u) << json.out;
  EXPECT_TRUE(device["numaNodes"][0].is_number_integer()) << json.out;
  EXPECT_EQ(json.out.rfind("{\n    \"pods\": [", 0), 0u) << "indented as kubectl's:\n" << json.out;

  // YAML: the same object.
  const ProcessResult yaml = Pods({"list", "-o", "yaml"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  const YAML::Node doc = YAML::Load(yaml.out);
  EXPECT_EQ(doc["pods"][0]["pod"]["uid"].as<std::string>(), "one") << yaml.out;
  EXPECT_EQ(doc["pods"][0]["pod"]["containers"][0]["devices"][kGpu].as<int>(), 1) << yaml.out;
  EXPECT_NE(yaml.out.find("recovered: false\n"), std::string::npos) << yaml.out;

  // Wide: the table with the columns it leaves out, after them.
  const ProcessResult table = Pods({"list"});
  const ProcessResult wide = Pods({"list", "-o", "wide"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  EXPECT_EQ(Headers(table.out),
            (std::vector<std::string>{"UID", "POD", "CONTAINER", "DEVICES", "HEALTH"}))
      << table.out;
  EXPECT_EQ(Headers(wide.out), (std::vector<std::string>{"UID", "POD", "CONTAINER", "DEVICES",
                                                         "HEALTH", "TYPE", "REQUESTS"}))
      << wide.out;
  EXPECT_NE(wide.out.find("Healthy   regular   example.com/gpu=1\n"), std::string::npos)
      << wide.out;
  EXPECT_EQ(Pods({"list", "-o", "xml"}).exit_code, 2);
}

TEST_F(PodsCommandTest, OptionsWideAddsNumaNodes) {
  StartGpus();
  ASSERT_EQ(h_.Admit(PodManifest("one", kGpu, 1)).exit_code, 0);
  const ProcessResult table = Pods({"options", "one", "c"});
  const ProcessResult wide = Pods({"options", "one", "c", "-o", "wide"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  EXPECT_EQ(Headers(table.out), (std::vector<std::string>{"CONTAINER", "KIND", "VALUE"}))
      << table.out;
  EXPECT_EQ(Headers(wide.out), (std::vector<std::string>{"CONTAINER", "KIND", "VALUE", "NUMA"}))
      << wide.out;
  bool numa = false;
  for (absl::string_view line : absl::StrSplit(wide.out, '\n')) {
    if (absl::StrContains(line, "health") &&
        (absl::EndsWith(line, "   0") || absl::EndsWith(line, "   1"))) {
      numa = true;
    }
  }
  EXPECT_TRUE(numa) << wide.out;
}

// A device on NUMA node 0 is {"ID": 0}: protobuf's JSON drops a field at its default, and
// printed {} before.
TEST_F(PodsCommandTest, NumaNodeZeroIsVisible) {
  StartGpus();
  const ProcessResult json =
      h_.Run({"podresources", "allocatable", "--root-dir", h_.Root(), "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const Json allocatable = Json::parse(json.out, nullptr, false);
  ASSERT_FALSE(allocatable.is_discarded()) << json.out;
  std::set<Json> nodes;
  for (const Json& devices : allocatable["devices"]) {
    for (const Json& node : devices["topology"]["nodes"]) nodes.insert(node);
  }
  EXPECT_EQ(nodes, (std::set<Json>{Json{{"ID", 0}}, Json{{"ID", 1}}})) << json.out;
}

// A --timeout that cannot be one is a usage error whether or not a daemon is there. Before, a
// root without a daemon answered "no daemon at ..." and hid it.
TEST(PodsCommandWithoutADaemonTest, ABadTimeoutIsSaidFirst) {
  DaemonHarness h;
  const std::pair<const char*, const char*> cases[] = {
      {"soon", "devmgr: invalid --timeout soon (use e.g. 300ms, 10s, 1m)\n"},
      {"0s", "devmgr: --timeout must be positive, not 0s\n"},
      {"-1s", "devmgr: --timeout must be positive, not -1s\n"},
      {"inf", "devmgr: --timeout must be finite: a call needs a deadline\n"},
  };
  for (const auto& [timeout, said] : cases) {
    const ProcessResult listed =
        h.Run({"pods", "list", "--root-dir", h.Root(), "--timeout", timeout});
    EXPECT_EQ(listed.exit_code, 2) << timeout;
    EXPECT_EQ(listed.err, said);
  }
  const ProcessResult absent = h.Run({"pods", "list", "--root-dir", h.Root()});
  EXPECT_EQ(absent.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(absent.err, "no daemon at")) << absent.err;
}

}  // namespace
}  // namespace devmgr::testing
