// Dynamic Resource Allocation through the real binaries, as a user runs them: `devmgr serve`,
// DRA drivers (`devmgr plugin fake-dra`, registering through plugins_registry/ and reading
// claims from the daemon), and a pod whose manifest brings its ResourceClaims. The scenarios of
// upstream's node e2e tests (test/e2e_node/dra_test.go) that fit a node without an API server:
// two drivers preparing and unpreparing one pod, the claims listed by PodResources; the
// claims-in-use gauge with two drivers; a pod refused while one of two drivers fails its
// prepare and admitted once it succeeds, and one whose removal fails while a driver cannot
// unprepare; every claim of a running pod prepared again after a restart; a daemon SIGKILLed
// while a driver prepares, which comes back and neither loses nor doubles a claim; a hung driver
// that blocks only its own pods; a driver that restarts and registers again; a driver whose
// service listens only after it registered; and a rolling update of a driver.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/metrics_scrape.h"
#include "common/unix_socket.h"
#include "nlohmann/json.hpp"
#include "tests/integration/daemon_harness.h"
#include "tests/testlib/wait_for.h"

namespace devmgr {
namespace {

using Json = nlohmann::json;
using testing::BackgroundProcess;
using testing::DaemonHarness;
using testing::WaitFor;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr char kGpu[] = "gpu.example.com";
constexpr char kNic[] = "nic.example.com";

// A ResourceClaim document allocated device `device` of `driver`'s pool "node" for request
// "req".
std::string ClaimDocument(const std::string& name, const std::string& driver,
                          const std::string& device = "dev-0") {
  return absl::StrCat("---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n",
                      "metadata: {name: ", name, ", uid: uid-", name, "}\n",
                      "status: {allocation: {devices: {results: [{request: req, driver: ", driver,
                      ", pool: node, device: ", device, "}]}}}\n");
}

// A pod `uid` whose container "app" uses each claim of `claims` (pod claim i is "c<i>").
std::string PodWithClaims(const std::string& uid, const std::vector<std::string>& claims) {
  std::string pod_claims;
  std::string uses;
  for (size_t i = 0; i < claims.size(); ++i) {
    absl::StrAppend(&pod_claims, "  - {name: c", i, ", resourceClaimName: ", claims[i], "}\n");
    absl::StrAppend(&uses, i == 0 ? "" : ", ", "{name: c", i, "}");
  }
  return absl::StrCat("metadata: {name: pod-", uid, ", uid: ", uid, "}\nspec:\n",
                      "  resourceClaims:\n", pod_claims,
                      "  containers: [{name: app, resources: {claims: [", uses, "]}}]\n");
}

// How many times `needle` occurs in `text`.
int Occurrences(absl::string_view text, absl::string_view needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != absl::string_view::npos;
       at = text.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

// `dra claims -o json`: each claim name with whether it is prepared and its pods.
Json Claims(const DaemonHarness& h) {
  const testing::ProcessResult listed =
      h.Run({"dra", "claims", "--root-dir", h.Root(), "-o", "json"});
  if (listed.exit_code != 0) return Json();
  return Json::parse(listed.out, nullptr, false).value("claims", Json::array());
}

bool AllPrepared(const DaemonHarness& h, size_t count) {
  const Json claims = Claims(h);
  if (!claims.is_array() || claims.size() != count) return false;
  for (const Json& claim : claims) {
    if (!claim.value("prepared", false)) return false;
  }
  return true;
}

// The claims dra_manager_state records, by name, with their pods.
Json CheckpointClaims(const DaemonHarness& h) {
  const testing::ProcessResult shown =
      h.Run({"dra", "checkpoint", "show", "-o", "json", h.Path("dra_manager_state").string()});
  if (shown.exit_code != 0) return Json();
  return Json::parse(shown.out, nullptr, false).value("claims", Json::array());
}

// Registered: the daemon told `driver` (a fake-dra) that it is registered; for drivers that a
// probe pod cannot test (one whose prepare is slow or hangs).
bool Registered(const BackgroundProcess& driver) {
  return WaitFor([&] { return absl::StrContains(driver.err(), "registered=true"); }, 20s);
}

// Admission waits for drivers to register: a pod admitted before they did would be refused.
bool DriversRegistered(const DaemonHarness& h, const std::vector<std::string>& drivers) {
  return WaitFor(
      [&] {
        for (const std::string& driver : drivers) {
          if (!std::filesystem::exists(h.Path("plugins/" + driver + "/dra.sock"))) return false;
        }
        // The claims of a probe pod prepare only once every driver is registered.
        std::vector<std::string> claims;
        std::string manifest;
        for (const std::string& driver : drivers) {
          const std::string claim = "probe-" + driver.substr(0, driver.find('.'));
          claims.push_back(claim);
          absl::StrAppend(&manifest, ClaimDocument(claim, driver));
        }
        if (h.Admit(PodWithClaims("probe", claims) + manifest).exit_code != 0) return false;
        return h.Remove("probe").exit_code == 0;
      },
      20s);
}

TEST(DraTest, TwoDriversPrepareAndUnprepareAPodAndPodResourcesListsItsClaims) {
  DaemonHarness h;
  auto serve = h.StartServe({"--dra-sync-period", "100ms"});
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 2);
  auto nic = h.StartDraDriver(kNic, 1);
  ASSERT_TRUE(DriversRegistered(h, {kGpu, kNic}));

  const testing::ProcessResult admitted =
      h.Admit(PodWithClaims("p1", {"gpus", "nics"}) + ClaimDocument("gpus", kGpu, "dev-1") +
              ClaimDocument("nics", kNic));
  ASSERT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_TRUE(absl::StrContains(admitted.out, "gpu.example.com/device=dev-1")) << admitted.out;
  EXPECT_TRUE(absl::StrContains(admitted.out, "nic.example.com/device=dev-0")) << admitted.out;

  const testing::ProcessResult listed =
      h.Run({"podresources", "list", "--root-dir", h.Root(), "-o", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const Json pods = Json::parse(listed.out, nullptr, false);
  ASSERT_TRUE(pods.is_object()) << listed.out;
  std::vector<std::string> seen;
  for (const Json& pod : pods.value("podResources", Json::array())) {
    for (const Json& container : pod.value("containers", Json::array())) {
      for (const Json& resource : container.value("dynamicResources", Json::array())) {
        for (const Json& claim_resource : resource.value("claimResources", Json::array())) {
          seen.push_back(absl::StrCat(resource.value("claimName", ""), " ",
                                      claim_resource.value("driverName", ""), " ",
                                      claim_resource.value("deviceName", "")));
        }
      }
    }
  }
  EXPECT_EQ(seen,
            (std::vector<std::string>{"gpus gpu.example.com dev-1", "nics nic.example.com dev-0"}))
      << listed.out;
  EXPECT_TRUE(AllPrepared(h, 2)) << Claims(h).dump();

  ASSERT_EQ(h.Remove("p1").exit_code, 0);
  EXPECT_TRUE(Claims(h).empty()) << Claims(h).dump();
  EXPECT_TRUE(CheckpointClaims(h).empty());
}

// Upstream's node e2e "must provide metrics" (two plugins): one claim with a device of each
// driver counts once under "<any>" and once for each driver while its pod runs; once the pod is
// gone only "<any>" is left, at 0.
TEST(DraTest, MustProvideMetrics) {
  DaemonHarness h;
  const std::filesystem::path metrics = h.Path("metrics.sock");
  auto serve =
      h.StartServe({"--dra-sync-period", "100ms", "--metrics-address", "unix:" + metrics.string()});
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 1);
  auto nic = h.StartDraDriver(kNic, 1);
  ASSERT_TRUE(DriversRegistered(h, {kGpu, kNic}));
  const std::string both = absl::StrCat(
      "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n",
      "metadata: {name: both, uid: uid-both}\n", "status: {allocation: {devices: {results: [",
      "{request: a, driver: ", kGpu, ", pool: node, device: dev-0}, ",
      "{request: b, driver: ", kNic, ", pool: node, device: dev-0}]}}}\n");
  const testing::ProcessResult admitted = h.Admit(PodWithClaims("p1", {"both"}) + both);
  ASSERT_EQ(admitted.exit_code, 0) << admitted.err;

  // The gauge's samples, by driver.
  const auto in_use = [&]() -> std::map<std::string, std::string> {
    const absl::StatusOr<std::string> text = ScrapeMetrics(metrics);
    if (!text.ok()) return {{"error", text.status().ToString()}};
    std::map<std::string, std::string> samples;
    constexpr char kPrefix[] = "dra_resource_claims_in_use{driver_name=\"";
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      if (!absl::ConsumePrefix(&line, kPrefix)) continue;
      const std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits("\"} ", 1));
      if (parts.size() == 2) samples[parts[0]] = parts[1];
    }
    return samples;
  };
  EXPECT_EQ(in_use(),
            (std::map<std::string, std::string>{{"<any>", "1"}, {kGpu, "1"}, {kNic, "1"}}));

  ASSERT_EQ(h.Remove("p1").exit_code, 0);
  EXPECT_EQ(in_use(), (std::map<std::string, std::string>{{"<any>", "0"}}));
}

// Upstream's node e2e "must run pod if NodePrepareResources fails for one plugin and then
// succeeds". The kubelet keeps such a pod pending and retries; devmgr refuses the admission
// with the kubelet's text and leaves no trace (the claim the other driver prepared is
// unprepared), and the same pod is admitted once the failing driver prepares.
TEST(DraTest, MustRunPodIfNodePrepareResourcesFailsForOnePluginAndThenSucceeds) {
  DaemonHarness h;
  auto serve = h.StartServe({"--dra-sync-period", "100ms"});
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 1);
  ASSERT_TRUE(DriversRegistered(h, {kGpu}));
  auto nic = h.StartDraDriver(kNic, 1, {"--prepare-error", "injected failure"});
  ASSERT_TRUE(Registered(*nic)) << nic->err();
  const std::string pod = PodWithClaims("p1", {"gpus", "nics"}) + ClaimDocument("gpus", kGpu) +
                          ClaimDocument("nics", kNic);

  const testing::ProcessResult refused = h.Admit(pod);
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_TRUE(absl::StrContains(refused.err,
                                "NodePrepareResources failed for ResourceClaim nics: "
                                "injected failure"))
      << refused.err;
  EXPECT_TRUE(Claims(h).empty()) << Claims(h).dump();
  EXPECT_TRUE(CheckpointClaims(h).empty()) << CheckpointClaims(h).dump();
  EXPECT_TRUE(h.ListPods().value("pods", Json::array()).empty());
  EXPECT_TRUE(absl::StrContains(gpu->err(), "\"Unprepared claim\" claim=\"default/gpus\""))
      << gpu->err();

  DaemonHarness::Stop(*nic);
  nic = h.StartDraDriver(kNic, 1);
  ASSERT_TRUE(DriversRegistered(h, {kGpu, kNic}));
  const testing::ProcessResult admitted = h.Admit(pod);
  ASSERT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_TRUE(absl::StrContains(admitted.out, "nic.example.com/device=dev-0")) << admitted.out;
  EXPECT_TRUE(AllPrepared(h, 2)) << Claims(h).dump();
}

// Upstream's node e2e "must be functional when plugin starts to listen on a service socket after
// registration": the driver as two processes (`fake-dra --only registration`, then `--only
// service`). The daemon registers it before its service listens: a pod admitted then is
// refused and leaves no trace, and the same pod, admitted again as soon as the service
// listens, gets its claim prepared (gRPC's reconnect backoff would have refused it meanwhile).
TEST(DraTest, MustBeFunctionalWhenPluginStartsToListenOnAServiceSocketAfterRegistration) {
  DaemonHarness h;
  auto serve = h.StartServe({"--dra-sync-period", "100ms"});
  ASSERT_NE(serve, nullptr);
  auto registrar = h.StartDraDriver(kGpu, 1, {"--only", "registration"});
  ASSERT_TRUE(Registered(*registrar)) << registrar->err();
  const std::string pod = PodWithClaims("p1", {"gpu"}) + ClaimDocument("gpu", kGpu);
  const testing::ProcessResult refused = h.Admit(pod);
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_TRUE(absl::StrContains(refused.err, "No such file or directory")) << refused.err;
  EXPECT_TRUE(h.ListPods().value("pods", Json::array()).empty());

  auto service = h.StartDraDriver(kGpu, 1, {"--only", "service"});
  const std::filesystem::path socket = h.Path(absl::StrCat("plugins/", kGpu, "/dra.sock"));
  ASSERT_TRUE(WaitFor([&] { return SomeoneListens(socket); }, 20s)) << service->err();
  EXPECT_FALSE(absl::StrContains(service->err(), "registered=")) << service->err();
  const testing::ProcessResult admitted = h.Admit(pod);
  ASSERT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_TRUE(absl::StrContains(admitted.out, "gpu.example.com/device=dev-0")) << admitted.out;
  EXPECT_TRUE(AllPrepared(h, 1)) << Claims(h).dump();
}

// Upstream's node e2e "must run pod if NodeUnprepareResources fails for one plugin and then
// succeeds": the removal fails with the kubelet's text and the pod stays admitted, its claims
// prepared (the other driver's, which it unprepared, prepared again); removing it again once
// the driver unprepares succeeds and leaves nothing.
TEST(DraTest, MustRunPodIfNodeUnprepareResourcesFailsForOnePluginAndThenSucceeds) {
  DaemonHarness h;
  auto serve = h.StartServe({"--dra-sync-period", "100ms"});
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 1);
  ASSERT_TRUE(DriversRegistered(h, {kGpu}));
  auto nic = h.StartDraDriver(kNic, 1, {"--unprepare-error", "injected failure"});
  ASSERT_TRUE(Registered(*nic)) << nic->err();
  const std::string pod = PodWithClaims("p1", {"gpus", "nics"}) + ClaimDocument("gpus", kGpu) +
                          ClaimDocument("nics", kNic);
  ASSERT_TRUE(WaitFor([&] { return h.Admit(pod).exit_code == 0; }, 20s));

  const testing::ProcessResult failed = h.Remove("p1");
  EXPECT_EQ(failed.exit_code, 1) << failed.err;
  EXPECT_TRUE(absl::StrContains(failed.err,
                                "NodeUnprepareResources failed for ResourceClaim nics: "
                                "injected failure"))
      << failed.err;
  EXPECT_EQ(h.ListPods().value("pods", Json::array()).size(), 1u);
  EXPECT_EQ(CheckpointClaims(h).size(), 2u) << CheckpointClaims(h).dump();
  // The GPU driver unprepared its claim in the failed removal, and is asked to prepare it again.
  const auto gpu_lines = [&](absl::string_view what) {
    return Occurrences(gpu->err(), absl::StrCat("\"", what, "\" claim=\"default/gpus\""));
  };
  EXPECT_EQ(gpu_lines("Unprepared claim"), 1) << gpu->err();
  EXPECT_TRUE(WaitFor([&] { return gpu_lines("Prepared claim") == 2; }, 20s)) << gpu->err();

  DaemonHarness::Stop(*nic);
  nic = h.StartDraDriver(kNic, 1);
  ASSERT_TRUE(DriversRegistered(h, {kGpu, kNic}));
  const testing::ProcessResult removed = h.Remove("p1");
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_TRUE(absl::StrContains(nic->err(), "\"Unprepared claim\" claim=\"default/nics\""))
      << nic->err();
  EXPECT_TRUE(h.ListPods().value("pods", Json::array()).empty());
  EXPECT_TRUE(Claims(h).empty()) << Claims(h).dump();
  EXPECT_TRUE(CheckpointClaims(h).empty()) << CheckpointClaims(h).dump();
}

// The kubelet's PodResources gates (beta, on by default): KubeletPodResourcesDynamicResources
// off lists a pod's containers without their claims' devices, KubeletPodResourcesGet off
// answers Get with upstream's text. On, both answer (the test above lists the claims). The
// health of the claims' devices is no listing, and a Watch still carries it.
TEST(DraTest, ThePodResourcesGatesTurnGetAndTheDynamicResourcesOff) {
  DaemonHarness h;
  auto serve = h.StartServe({"--dra-sync-period", "100ms", "--feature-gates",
                             "KubeletPodResourcesGet=false,DRAPrioritizedList=true,"
                             "KubeletPodResourcesDynamicResources=false"});
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 1);
  ASSERT_TRUE(DriversRegistered(h, {kGpu}));
  ASSERT_EQ(h.Admit(PodWithClaims("p1", {"gpu"}) + ClaimDocument("gpu", kGpu)).exit_code, 0);

  const testing::ProcessResult listed =
      h.Run({"podresources", "list", "--root-dir", h.Root(), "-o", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const Json pods = Json::parse(listed.out, nullptr, false);
  ASSERT_TRUE(pods.is_object()) << listed.out;
  int containers = 0;
  for (const Json& pod : pods.value("podResources", Json::array())) {
    for (const Json& container : pod.value("containers", Json::array())) {
      ++containers;
      EXPECT_TRUE(container.value("dynamicResources", Json::array()).empty()) << listed.out;
    }
  }
  EXPECT_EQ(containers, 1) << listed.out;

  BackgroundProcess watch(
      {testing::DevmgrBinary(), "podresources", "watch", "--root-dir", h.Root(), "-o", "json"});
  EXPECT_TRUE(WaitFor([&] { return absl::StrContains(watch.out(), "\"claim:c0\""); }, 20s))
      << watch.out() << watch.err();
  EXPECT_FALSE(absl::StrContains(watch.out(), "\"dynamicResources\":[{")) << watch.out();

  const testing::ProcessResult got =
      h.Run({"podresources", "get", "--root-dir", h.Root(), "default", "pod-p1"});
  EXPECT_NE(got.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(got.err, "PodResources API Get method disabled")) << got.err;

  const testing::ProcessResult bad = h.Run(
      {"serve", "--root-dir", h.Path("other"), "--feature-gates", "KubeletPodResourcesGet=no"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_TRUE(absl::StrContains(bad.err,
                                "invalid value of KubeletPodResourcesGet=no, err: "
                                "strconv.ParseBool: parsing \"no\": invalid syntax"))
      << bad.err;
}

// A daemon without DRA keeps no slices, and slices says so. Before, it said "cannot list
// ResourceSlices: " and no more (the service is not registered: UNIMPLEMENTED, empty).
TEST(DraTest, SlicesSaysADaemonWithoutDraKeepsNone) {
  DaemonHarness h;
  auto serve = h.StartServe({"--dra=false"});
  ASSERT_NE(serve, nullptr);
  const testing::ProcessResult listed = h.Run({"slices", "list", "--root-dir", h.Root()});
  EXPECT_EQ(listed.exit_code, 1) << listed.err;
  EXPECT_EQ(
      listed.err,
      "devmgr: cannot list ResourceSlices: the daemon keeps none (it runs with --dra=false)\n");
}

// Upstream's node e2e "must register after Kubelet restart": the driver keeps running while the
// daemon restarts, and is registered again by the new one, which admits a pod with its claim at
// once. Before, the driver's claim lookups failed with "No such file or directory" for a while
// after the restart: its channel to the daemon waited out gRPC's reconnect backoff.
TEST(DraTest, MustRegisterAfterKubeletRestart) {
  DaemonHarness h;
  auto serve = h.StartServe({"--dra-sync-period", "100ms"});
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 1);
  ASSERT_TRUE(Registered(*gpu)) << gpu->err();
  ASSERT_EQ(Occurrences(gpu->err(), "registered=true"), 1) << gpu->err();

  DaemonHarness::Stop(*serve);
  serve = h.StartServe({"--dra-sync-period", "100ms"});
  ASSERT_NE(serve, nullptr);
  EXPECT_TRUE(WaitFor([&] { return Occurrences(gpu->err(), "registered=true") == 2; }, 20s))
      << gpu->err();
  const testing::ProcessResult admitted =
      h.Admit(PodWithClaims("p1", {"gpu"}) + ClaimDocument("gpu", kGpu));
  EXPECT_EQ(admitted.exit_code, 0) << admitted.err;
}

// Upstream's node e2e "must call NodeUnprepareResources for deleted pod after Kubelet restart":
// a removal the driver refuses leaves the pod admitted, across a restart of the daemon, which
// asks the driver again at the next removal; once the driver unprepares, the pod is gone.
TEST(DraTest, MustCallNodeUnprepareResourcesForDeletedPodAfterKubeletRestart) {
  DaemonHarness h;
  auto serve = h.StartServe({"--dra-sync-period", "100ms"});
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 1, {"--unprepare-error", "injected failure"});
  ASSERT_TRUE(Registered(*gpu)) << gpu->err();
  ASSERT_EQ(h.Admit(PodWithClaims("p1", {"gpu"}) + ClaimDocument("gpu", kGpu)).exit_code, 0);
  const std::string refusal =
      "NodeUnprepareResources failed for ResourceClaim gpu: injected failure";
  const testing::ProcessResult failed = h.Remove("p1");
  EXPECT_EQ(failed.exit_code, 1) << failed.err;
  EXPECT_TRUE(absl::StrContains(failed.err, refusal)) << failed.err;

  DaemonHarness::Stop(*serve);
  serve = h.StartServe({"--dra-sync-period", "100ms"});
  ASSERT_NE(serve, nullptr);
  ASSERT_TRUE(Registered(*gpu)) << gpu->err();
  ASSERT_TRUE(WaitFor([&] { return Occurrences(gpu->err(), "registered=true") == 2; }, 20s));
  const testing::ProcessResult failed_again = h.Remove("p1");
  EXPECT_EQ(failed_again.exit_code, 1) << failed_again.err;
  EXPECT_TRUE(absl::StrContains(failed_again.err, refusal)) << failed_again.err;
  EXPECT_EQ(h.ListPods().value("pods", Json::array()).size(), 1u);

  DaemonHarness::Stop(*gpu);
  gpu = h.StartDraDriver(kGpu, 1);
  ASSERT_TRUE(Registered(*gpu)) << gpu->err();
  ASSERT_TRUE(WaitFor([&] { return h.Remove("p1").exit_code == 0; }, 20s));
  EXPECT_TRUE(absl::StrContains(gpu->err(), "\"Unprepared claim\" claim=\"default/gpu\""))
      << gpu->err();
  EXPECT_TRUE(h.ListPods().value("pods", Json::array()).empty());
  EXPECT_TRUE(CheckpointClaims(h).empty()) << CheckpointClaims(h).dump();
}

TEST(DraTest, MustRetryNodePrepareResourcesAfterKubeletRestart) {
  DaemonHarness h;
  auto serve = h.StartServe({"--dra-sync-period", "100ms"});
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 1);
  ASSERT_TRUE(DriversRegistered(h, {kGpu}));
  ASSERT_EQ(h.Admit(PodWithClaims("p1", {"gpu"}) + ClaimDocument("gpu", kGpu)).exit_code, 0);

  DaemonHarness::Stop(*serve);
  serve = h.StartServe({"--dra-sync-period", "100ms"});
  ASSERT_NE(serve, nullptr);
  // Prepared is set only by a driver's answer since the start: the claim was prepared again.
  ASSERT_TRUE(WaitFor([&] { return AllPrepared(h, 1); }, 20s)) << Claims(h).dump();
  const testing::ProcessResult options =
      h.Run({"pods", "options", "p1", "app", "--root-dir", h.Root()});
  EXPECT_TRUE(absl::StrContains(options.out, "gpu.example.com/device=dev-0")) << options.out;
}

TEST(DraTest, ADaemonKilledDuringNodePrepareResourcesNeitherLosesNorDoublesAClaim) {
  DaemonHarness h;
  auto serve = h.StartServe({"--dra-sync-period", "100ms"});
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 1, {"--prepare-latency", "3s"});
  ASSERT_TRUE(Registered(*gpu)) << gpu->err();

  // The claim is recorded for the pod before the driver is called; kill the daemon then.
  BackgroundProcess admit({testing::DevmgrBinary(), "pods", "admit", "--root-dir", h.Root(), "-"},
                          PodWithClaims("p1", {"gpu"}) + ClaimDocument("gpu", kGpu));
  ASSERT_TRUE(WaitFor([&] { return CheckpointClaims(h).size() == 1; }, 20s));
  serve->Signal(SIGKILL);
  serve->WaitForExit();
  EXPECT_NE(admit.WaitForExit(), 0) << "the daemon died before it answered";

  serve = h.StartServe({"--dra-sync-period", "100ms"});
  ASSERT_NE(serve, nullptr);
  // Never admitted: the pod is not listed, and its claim is unprepared by the reconcile pass,
  // never prepared again (upstream's node e2e "must not call NodePrepareResources for deleted
  // pod after Kubelet restart"): the driver, answering one call at a time, prepared it at most
  // once, the call the daemon made before it was killed.
  ASSERT_TRUE(WaitFor([&] { return CheckpointClaims(h).empty(); }, 20s))
      << CheckpointClaims(h).dump();
  EXPECT_EQ(h.ListPods().value("pods", Json::array()).size(), 0u);
  ASSERT_TRUE(WaitFor([&] { return absl::StrContains(gpu->err(), "\"Unprepared claim\""); }, 20s))
      << gpu->err();
  EXPECT_LE(Occurrences(gpu->err(), "\"Prepared claim\""), 1) << gpu->err();

  // Admitted again, it holds the claim once.
  const testing::ProcessResult again =
      h.Admit(PodWithClaims("p1", {"gpu"}) + ClaimDocument("gpu", kGpu));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const Json claims = CheckpointClaims(h);
  ASSERT_EQ(claims.size(), 1u) << claims.dump();
  EXPECT_EQ(claims[0]["podUIDs"], Json::array({"p1"}));
}

TEST(DraTest, AHungDriverBlocksOnlyItsOwnPods) {
  DaemonHarness h;
  auto serve = h.StartServe({"--dra-sync-period", "100ms", "--dra-call-timeout", "4s"});
  ASSERT_NE(serve, nullptr);
  auto nic = h.StartDraDriver(kNic, 1);
  ASSERT_TRUE(DriversRegistered(h, {kNic}));
  auto gpu = h.StartDraDriver(kGpu, 1, {"--prepare-hang"});
  ASSERT_TRUE(Registered(*gpu)) << gpu->err();

  BackgroundProcess stuck({testing::DevmgrBinary(), "pods", "admit", "--root-dir", h.Root(), "-"},
                          PodWithClaims("stuck", {"gpu"}) + ClaimDocument("gpu", kGpu));
  ASSERT_TRUE(WaitFor([&] { return CheckpointClaims(h).size() == 1; }, 20s));
  // While the GPU driver hangs, a pod of the NIC driver is admitted.
  const testing::ProcessResult other =
      h.Admit(PodWithClaims("other", {"nic"}) + ClaimDocument("nic", kNic));
  EXPECT_EQ(other.exit_code, 0) << other.err;
  EXPECT_FALSE(stuck.Wait(0ms).has_value()) << "the hung pod still waits for its driver";

  EXPECT_EQ(stuck.WaitForExit(), 1);
  EXPECT_TRUE(absl::StrContains(stuck.err(), "prepare dynamic resources: NodePrepareResources"))
      << stuck.err();
  EXPECT_TRUE(absl::StrContains(stuck.err(), "(DEADLINE_EXCEEDED)")) << stuck.err();
  const Json pods = h.ListPods().value("pods", Json::array());
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0]["pod"].value("uid", ""), "other");
}

TEST(DraTest, MustRegisterAfterPluginRestart) {
  DaemonHarness h;
  auto serve = h.StartServe({"--dra-sync-period", "100ms"});
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 1);
  ASSERT_TRUE(DriversRegistered(h, {kGpu}));
  ASSERT_EQ(h.Admit(PodWithClaims("p1", {"a"}) + ClaimDocument("a", kGpu)).exit_code, 0);

  DaemonHarness::Stop(*gpu);
  gpu = h.StartDraDriver(kGpu, 1);
  ASSERT_TRUE(DriversRegistered(h, {kGpu}));
  const testing::ProcessResult admitted =
      h.Admit(PodWithClaims("p2", {"b"}) + ClaimDocument("b", kGpu));
  EXPECT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_EQ(h.Remove("p1").exit_code, 0) << "the restarted driver unprepares the old claim too";
  EXPECT_EQ(CheckpointClaims(h).size(), 1u);
}

// A rolling update of a driver (kubelet 1.33 and later): the driver's new pod starts beside the
// old one, both serve under upstream's rolling-update socket names and register as two
// endpoints of one driver (taking turns for calls through serialize.lock); calls go to the
// newest connected one, and when the old one stops the driver stays registered: a claim the old
// instance prepared is unprepared by the new one.
TEST(DraTest, ARollingUpdateRunsTwoEndpointsOfOneDriver) {
  constexpr char kOldUid[] = "11111111-2222-3333-4444-555555555555";
  constexpr char kNewUid[] = "66666666-7777-8888-9999-000000000000";
  DaemonHarness h;
  auto serve = h.StartServe({"--dra-sync-period", "100ms"});
  ASSERT_NE(serve, nullptr);
  const std::string driver_dir = absl::StrCat("plugins/", kGpu, "/");
  auto old_driver = h.StartDraDriver(kGpu, 1, {"--rolling-update", kOldUid});
  const std::filesystem::path old_service =
      h.Path(absl::StrCat(driver_dir, "dra-", kOldUid, ".sock"));
  const std::filesystem::path old_registrar =
      h.Path(absl::StrCat("plugins_registry/", kGpu, "-", kOldUid, "-reg.sock"));
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(old_registrar); }, 20s));
  EXPECT_TRUE(std::filesystem::exists(old_service));
  ASSERT_TRUE(WaitFor(
      [&] { return h.Admit(PodWithClaims("p1", {"a"}) + ClaimDocument("a", kGpu)).exit_code == 0; },
      20s));
  EXPECT_TRUE(absl::StrContains(old_driver->err(), "claimUID=\"uid-a\"")) << old_driver->err();

  auto new_driver = h.StartDraDriver(kGpu, 1, {"--rolling-update", kNewUid});
  ASSERT_TRUE(Registered(*new_driver)) << new_driver->err();
  EXPECT_TRUE(std::filesystem::exists(old_registrar)) << "both instances run side by side";
  EXPECT_TRUE(std::filesystem::exists(h.Path(driver_dir + "serialize.lock")))
      << "the two take turns for their calls through a lock file";
  // Once its connection is up, the newest endpoint gets the calls.
  ASSERT_TRUE(WaitFor(
      [&] {
        if (h.Admit(PodWithClaims("p2", {"b"}) + ClaimDocument("b", kGpu)).exit_code != 0) {
          return false;
        }
        if (absl::StrContains(new_driver->err(), "claimUID=\"uid-b\"")) return true;
        h.Remove("p2");
        return false;
      },
      20s))
      << new_driver->err();

  DaemonHarness::Stop(*old_driver);
  EXPECT_FALSE(std::filesystem::exists(old_registrar));
  const testing::ProcessResult removed = h.Remove("p1");
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_TRUE(WaitFor([&] {
    return absl::StrContains(new_driver->err(), "\"Unprepared claim\" claim=\"default/a\"");
  })) << new_driver->err();
  const testing::ProcessResult admitted =
      h.Admit(PodWithClaims("p3", {"c"}) + ClaimDocument("c", kGpu));
  EXPECT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_EQ(CheckpointClaims(h).size(), 2u) << "b and c";
}

// KEP-5004 through the binaries (gate DRAExtendedResource): a container asks for the extended
// resource example.com/gpu, which the scheduler satisfied with a DRA device and recorded in the
// pod's status.extendedResourceClaimStatus. The device manager leaves the resource alone, the
// driver prepares the scheduler's claim, and the container gets its CDI device.
TEST(DraTest, AnExtendedResourceBackedByDraIsPreparedByItsDriver) {
  DaemonHarness h;
  auto serve = h.StartServe({"--dra-sync-period", "100ms", "--dra-extended-resource", "true"});
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 2);
  ASSERT_TRUE(DriversRegistered(h, {kGpu}));
  const std::string manifest = absl::StrCat(
      "metadata: {name: pod-x, uid: x}\n",
      "spec: {containers: [{name: app, resources: {limits: {example.com/gpu: 1}}}]}\n",
      "status:\n  extendedResourceClaimStatus:\n",
      "    resourceClaimName: pod-x-extended-resources-abc\n",
      "    requestMappings: [{containerName: app, resourceName: example.com/gpu, ",
      "requestName: container-0-request-0}]\n",
      "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n",
      "metadata: {name: pod-x-extended-resources-abc, uid: uid-ext}\n",
      "status: {allocation: {devices: {results: [{request: container-0-request-0, driver: ", kGpu,
      ", pool: node, device: dev-1}]}}}\n");
  const testing::ProcessResult admitted = h.Admit(manifest);
  ASSERT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_TRUE(absl::StrContains(admitted.out, "gpu.example.com/device=dev-1")) << admitted.out;
  const testing::ProcessResult listed =
      h.Run({"podresources", "list", "--root-dir", h.Root(), "-o", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_TRUE(absl::StrContains(listed.out, "\"claimName\": \"pod-x-extended-resources-abc\""))
      << listed.out;
  ASSERT_EQ(CheckpointClaims(h).size(), 1u);
  ASSERT_EQ(h.Remove("x").exit_code, 0);
  EXPECT_TRUE(CheckpointClaims(h).empty());
}

// The driver publishes its devices as ResourceSlices into the daemon's local store (a node
// without a cluster): 130 devices in two slices of one pool owned by the Node, listed by
// `devmgr slices`; once the driver is gone for the wiping delay, the daemon wipes them.
TEST(DraTest, ADriversDevicesArePublishedAsResourceSlicesAndWipedWhenItIsGone) {
  DaemonHarness h;
  auto serve = h.StartServe({"--dra-sync-period", "100ms", "--dra-wiping-delay", "300ms"});
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 130);
  ASSERT_TRUE(Registered(*gpu)) << gpu->err();
  auto listed = [&] {
    const testing::ProcessResult out =
        h.Run({"slices", "list", "--root-dir", h.Root(), "-o", "json"});
    if (out.exit_code != 0) return Json();
    return Json::parse(out.out, nullptr, false).value("items", Json::array());
  };
  ASSERT_TRUE(WaitFor([&] { return listed().size() == 2; }, 20s)) << listed().dump();
  const Json items = listed();
  size_t devices = 0;
  for (const Json& slice : items) {
    EXPECT_EQ(slice["spec"]["driver"], kGpu);
    EXPECT_EQ(slice["spec"]["nodeName"], "node");
    EXPECT_EQ(slice["spec"]["pool"],
              Json({{"name", "node"}, {"generation", 1}, {"resourceSliceCount", 2}}));
    EXPECT_EQ(slice["metadata"]["ownerReferences"][0]["kind"], "Node");
    devices += slice["spec"]["devices"].size();
  }
  EXPECT_EQ(devices, 130u);
  const std::string first = items[0]["metadata"]["name"];
  EXPECT_TRUE(absl::StartsWith(first, "00000-gpu.example.com-node-")) << first;
  EXPECT_EQ(items[0]["spec"]["devices"][0]["attributes"]["index"]["int"], 0);
  const testing::ProcessResult got = h.Run({"slices", "get", first, "--root-dir", h.Root()});
  EXPECT_EQ(got.exit_code, 0) << got.err;
  EXPECT_TRUE(absl::StrContains(got.out, "gpu.example.com")) << got.out;
  EXPECT_EQ(h.Run({"slices", "get", "nope", "--root-dir", h.Root()}).exit_code, 1);

  DaemonHarness::Stop(*gpu);
  EXPECT_TRUE(WaitFor([&] { return listed().empty(); }, 20s)) << listed().dump();
}

// KEP-4680 for DRA through the binaries: the driver's health stream reports a device unhealthy
// (SIGUSR1 to the fake driver), and `pods list` and a PodResources Watch show it on the claim's
// entry.
TEST(DraTest, ADeviceTheDriverReportsUnhealthyShowsInPodsList) {
  DaemonHarness h;
  auto serve = h.StartServe({"--dra-sync-period", "100ms"});
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 1);
  ASSERT_TRUE(DriversRegistered(h, {kGpu}));
  ASSERT_EQ(h.Admit(PodWithClaims("p1", {"gpu"}) + ClaimDocument("gpu", kGpu)).exit_code, 0);

  // The health of the claim's device, as `pods list -o json` gives it.
  auto claim_health = [&] {
    for (const Json& pod : h.ListPods().value("pods", Json::array())) {
      for (const Json& container : pod.value("containers", Json::array())) {
        for (const Json& resource : container.value("resources", Json::array())) {
          if (resource.value("resourceName", "") != "claim:c0") continue;
          for (const Json& device : resource.value("devices", Json::array())) {
            return device.value("id", "") + " " + device.value("health", "");
          }
        }
      }
    }
    return std::string();
  };
  ASSERT_TRUE(
      WaitFor([&] { return claim_health() == "gpu.example.com/device=dev-0 Healthy"; }, 20s))
      << claim_health();
  // A PodResources Watch carries it too, in pod_health under the claim's entry.
  BackgroundProcess watch(
      {testing::DevmgrBinary(), "podresources", "watch", "--root-dir", h.Root(), "-o", "json"});
  auto watched_health = [&] {
    std::string last;
    for (absl::string_view line : absl::StrSplit(watch.out(), '\n', absl::SkipEmpty())) {
      const Json event = Json::parse(line, nullptr, false);
      if (event.is_discarded()) continue;
      for (const Json& pod : event.value("podHealth", Json::array())) {
        for (const Json& container : pod.value("containers", Json::array())) {
          for (const Json& status : container.value("allocatedResourcesStatus", Json::array())) {
            if (status.value("name", "") != "claim:c0") continue;
            for (const Json& device : status.value("resources", Json::array())) {
              last = device.value("resourceId", "") + " " + device.value("health", "");
            }
          }
        }
      }
    }
    return last;
  };
  ASSERT_TRUE(
      WaitFor([&] { return watched_health() == "gpu.example.com/device=dev-0 Healthy"; }, 20s))
      << watch.out() << watch.err();
  gpu->Signal(SIGUSR1);
  EXPECT_TRUE(
      WaitFor([&] { return claim_health() == "gpu.example.com/device=dev-0 Unhealthy"; }, 20s))
      << claim_health();
  EXPECT_TRUE(
      WaitFor([&] { return watched_health() == "gpu.example.com/device=dev-0 Unhealthy"; }, 20s))
      << watch.out();
  const testing::ProcessResult listed = h.Run({"pods", "list", "--root-dir", h.Root()});
  EXPECT_TRUE(absl::StrContains(listed.out, "Unhealthy")) << listed.out;
}

// The flags of a daemon that allocates claims itself, from the DeviceClass "gpu.example.com"
// (kGpu's devices) with `class_spec_more` added to its spec (block style, indented two spaces).
std::vector<std::string> AllocatingNodeFlags(const DaemonHarness& h,
                                             const std::string& class_spec_more) {
  std::ofstream(h.Path("classes.yaml"))
      << "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.example.com}\n"
         "spec:\n  selectors: [{cel: {expression: 'device.driver == \"gpu.example.com\"'}}]\n"
      << class_spec_more;
  return {"--dra-sync-period", "100ms", "--device-classes", h.Path("classes.yaml").string()};
}

// Published: the daemon's slice store lists `device`.
bool Published(const DaemonHarness& h, const std::string& device) {
  return WaitFor(
      [&] {
        return absl::StrContains(
            h.Run({"slices", "list", "--root-dir", h.Root(), "-o", "json"}).out,
            absl::StrCat("\"", device, "\""));
      },
      20s);
}

// Pod UID `uid` with claim `claim` (uid "uid-<claim>"), which asks for one device of kGpu's class
// and comes without status: the node allocates it.
std::string Unallocated(const std::string& uid, const std::string& claim) {
  return PodWithClaims(uid, {claim}) +
         absl::StrCat("---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n",
                      "metadata: {name: ", claim, ", uid: uid-", claim, "}\n",
                      "spec: {devices: {requests: [{name: req, exactly: {deviceClassName: ", kGpu,
                      "}}]}}\n");
}

// A node without a scheduler: a claim that comes with its pod without status.allocation is
// allocated by `devmgr serve` from the ResourceSlices its driver published and the DeviceClasses
// of --device-classes, then prepared by the driver, which reads the allocation from the daemon.
// A claim no device is left for is refused without a trace; a removed pod's device is free
// again; the allocations survive a restart.
TEST(DraTest, ANodeWithoutASchedulerAllocatesClaimsFromItsDriversSlices) {
  DaemonHarness h;
  const std::vector<std::string> flags = AllocatingNodeFlags(h, "");
  auto serve = h.StartServe(flags);
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 2);
  ASSERT_TRUE(DriversRegistered(h, {kGpu}));
  // Allocation reads the published slices: wait for both devices.
  ASSERT_TRUE(Published(h, "dev-1"));

  const testing::ProcessResult first = h.Admit(Unallocated("p1", "a"));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_TRUE(absl::StrContains(first.out, "gpu.example.com/device=dev-0")) << first.out;
  const testing::ProcessResult second = h.Admit(Unallocated("p2", "b"));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_TRUE(absl::StrContains(second.out, "gpu.example.com/device=dev-1")) << second.out;

  const testing::ProcessResult third = h.Admit(Unallocated("p3", "c"));
  EXPECT_EQ(third.exit_code, 1) << third.err;
  EXPECT_TRUE(absl::StrContains(third.err, "cannot allocate all claims")) << third.err;
  EXPECT_EQ(h.ListPods().value("pods", Json::array()).size(), 2u);
  EXPECT_EQ(Claims(h).size(), 2u) << Claims(h).dump();

  ASSERT_EQ(h.Remove("p1").exit_code, 0);
  const testing::ProcessResult again = h.Admit(Unallocated("p3", "c"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(absl::StrContains(again.out, "gpu.example.com/device=dev-0")) << again.out;

  // After a restart the claims keep their devices, and the next claim finds none.
  DaemonHarness::Stop(*serve);
  serve = h.StartServe(flags);
  ASSERT_NE(serve, nullptr);
  ASSERT_TRUE(WaitFor([&] { return AllPrepared(h, 2); }, 20s)) << Claims(h).dump();
  const testing::ProcessResult options =
      h.Run({"pods", "options", "p3", "app", "--root-dir", h.Root()});
  EXPECT_TRUE(absl::StrContains(options.out, "gpu.example.com/device=dev-0")) << options.out;
  const testing::ProcessResult fourth = h.Admit(Unallocated("p4", "d"));
  EXPECT_EQ(fourth.exit_code, 1) << fourth.out;
  EXPECT_TRUE(absl::StrContains(fourth.err, "cannot allocate all claims")) << fourth.err;
}

// --node-name is taken as the kubelet takes its --hostname-override, trimmed and lower-cased:
// " NODE " is the node "node" whose slices its driver publishes, and allocates from them.
// Before, a name with upper case letters was taken as it was, and matched no slice.
TEST(DraTest, TheNodesNameIsTrimmedAndLowerCasedAsTheKubeletsIs) {
  DaemonHarness h;
  std::vector<std::string> flags = AllocatingNodeFlags(h, "");
  flags.insert(flags.end(), {"--node-name", " NODE "});
  auto serve = h.StartServe(flags);
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 1);
  ASSERT_TRUE(DriversRegistered(h, {kGpu}));
  ASSERT_TRUE(Published(h, "dev-0"));
  const testing::ProcessResult admitted = h.Admit(Unallocated("p1", "a"));
  ASSERT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_TRUE(absl::StrContains(admitted.out, "gpu.example.com/device=dev-0")) << admitted.out;
}

// A damaged claim record (kept aside at the start) takes with it which claims the node
// allocated, but not the devices the driver prepared for them: dra_manager_state names those,
// and the node's allocator leaves them alone until their pod is removed (and refuses the lost
// claim brought again unallocated). The pod's run options say what was lost instead of leaving
// its device out. Before, the next claim got the device the running pod's claim was prepared
// with.
TEST(DraTest, ADamagedClaimRecordLeavesThePreparedDevicesHeld) {
  DaemonHarness h;
  const std::vector<std::string> flags = AllocatingNodeFlags(h, "");
  auto serve = h.StartServe(flags);
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 2);
  ASSERT_TRUE(DriversRegistered(h, {kGpu}));
  ASSERT_TRUE(Published(h, "dev-1"));
  const testing::ProcessResult first = h.Admit(Unallocated("p1", "a"));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_TRUE(absl::StrContains(first.out, "gpu.example.com/device=dev-0")) << first.out;

  DaemonHarness::Stop(*serve);
  // The claim record (node/claim_record.h) damaged.
  std::ofstream(std::filesystem::path(h.Root()) / "devmgr_pod_claims", std::ios::trunc)
      << "{not a record";
  serve = h.StartServe(flags);
  ASSERT_NE(serve, nullptr);
  ASSERT_TRUE(Published(h, "dev-1"));
  const testing::ProcessResult options =
      h.Run({"pods", "options", "p1", "app", "--root-dir", h.Root()});
  EXPECT_EQ(options.exit_code, 1) << options.out;
  EXPECT_TRUE(absl::StrContains(options.err, "the claim record does not")) << options.err;

  // The lost claim brought again unallocated: its allocation is not known.
  const testing::ProcessResult shared = h.Admit(Unallocated("p4", "a"));
  EXPECT_EQ(shared.exit_code, 1) << shared.out;
  EXPECT_TRUE(absl::StrContains(shared.err, "its allocation is not known")) << shared.err;

  const testing::ProcessResult second = h.Admit(Unallocated("p2", "b"));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_TRUE(absl::StrContains(second.out, "gpu.example.com/device=dev-1")) << second.out;
  const testing::ProcessResult third = h.Admit(Unallocated("p3", "c"));
  EXPECT_EQ(third.exit_code, 1) << third.out;
  EXPECT_TRUE(absl::StrContains(third.err, "cannot allocate all claims")) << third.err;

  // Removed, the pod's claim is unprepared (its pod is gone) and its device is free again.
  ASSERT_EQ(h.Remove("p1").exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return Claims(h).size() == 1; }, 20s)) << Claims(h).dump();
  const testing::ProcessResult again = h.Admit(Unallocated("p3", "c"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(absl::StrContains(again.out, "gpu.example.com/device=dev-0")) << again.out;
}

// How a driver configures its devices on a node without an API server: the opaque
// configurations of the claim's allocation (its class's, then its own) reach the driver with
// the claim, whether the node allocated it or it came allocated, and again after a restart,
// when the daemon prepares it from its record. fake-dra logs the parameters meant for it.
TEST(DraTest, ADriverReadsTheAllocationConfigOfItsClaims) {
  DaemonHarness h;
  const std::vector<std::string> flags = AllocatingNodeFlags(
      h, "  config: [{opaque: {driver: gpu.example.com, parameters: {from: class}}}]\n");
  auto serve = h.StartServe(flags);
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 2);
  ASSERT_TRUE(DriversRegistered(h, {kGpu}));
  ASSERT_TRUE(Published(h, "dev-1"));

  // Allocated by the node: the class's configuration, then the claim's.
  const testing::ProcessResult allocated = h.Admit(
      PodWithClaims("p1", {"a"}) +
      absl::StrCat("---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n",
                   "metadata: {name: a, uid: uid-a}\n",
                   "spec: {devices: {requests: [{name: req, exactly: {deviceClassName: ", kGpu,
                   "}}], config: [{opaque: {driver: ", kGpu, ", parameters: {mode: fast}}}]}}\n"));
  ASSERT_EQ(allocated.exit_code, 0) << allocated.err;
  constexpr char kAllocatedConfig[] = R"(config=[{"from":"class"} {"mode":"fast"}])";
  EXPECT_TRUE(WaitFor([&] { return absl::StrContains(gpu->err(), kAllocatedConfig); }, 20s))
      << gpu->err();

  // Allocated elsewhere: the configuration comes in status.allocation; another driver's is not
  // this driver's.
  const testing::ProcessResult given = h.Admit(
      PodWithClaims("p2", {"b"}) +
      absl::StrCat("---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n",
                   "metadata: {name: b, uid: uid-b}\n",
                   "status: {allocation: {devices: {results: [{request: req, driver: ", kGpu,
                   ", pool: node, device: dev-1}], config: [",
                   "{source: FromClaim, opaque: {driver: nic.example.com, parameters: {x: 1}}}, ",
                   "{source: FromClaim, requests: [req], opaque: {driver: ", kGpu,
                   ", parameters: {mode: slow}}}]}}}\n"));
  ASSERT_EQ(given.exit_code, 0) << given.err;
  constexpr char kGivenConfig[] = R"(config=[{"mode":"slow"}])";
  EXPECT_TRUE(WaitFor([&] { return absl::StrContains(gpu->err(), kGivenConfig); }, 20s))
      << gpu->err();

  // After a restart both claims are prepared again from the daemon's record, with their
  // configuration.
  DaemonHarness::Stop(*serve);
  const size_t logged = gpu->err().size();
  serve = h.StartServe(flags);
  ASSERT_NE(serve, nullptr);
  ASSERT_TRUE(WaitFor([&] { return AllPrepared(h, 2); }, 20s)) << Claims(h).dump();
  EXPECT_TRUE(WaitFor(
      [&] {
        const std::string since = gpu->err().substr(logged);
        return absl::StrContains(since, kAllocatedConfig) && absl::StrContains(since, kGivenConfig);
      },
      20s))
      << gpu->err().substr(logged);
}

// The daemon is SIGKILLed at a random point of a stream of admissions and removals of pods with a
// claim each, FaultKillCount() times (200 in `make soak`): before the first write of
// dra_manager_state, while the driver prepares (it takes 30 ms), between its answer and the
// second write, during a removal's unprepare. After each restart, once the node has settled (the
// driver registered again, the DRA pass run): every admission reported done is there with its
// claim prepared, every removal reported done stays removed, no claim is recorded twice, and no
// claim is recorded for a pod the node does not have. What the kill cut off may go either way
// and is removed before the next round.
TEST(DraTest, ADaemonKilledDuringPrepareAndUnprepareLosesNothing) {
  DaemonHarness h;
  const std::vector<std::string> flags = {"--dra-sync-period", "100ms"};
  auto serve = h.StartServe(flags);
  ASSERT_NE(serve, nullptr);
  auto gpu = h.StartDraDriver(kGpu, 4, {"--prepare-latency", "30ms"});
  ASSERT_TRUE(DriversRegistered(h, {kGpu}));
  auto pod = [](int n) { return "pod-" + std::to_string(n); };
  auto claim = [](const std::string& uid) { return "claim-" + uid; };
  // The node's pods, and dra_manager_state's claims with their pods.
  auto listed = [&] {
    std::set<std::string> uids;
    for (const Json& item : h.ListPods().value("pods", Json::array())) {
      uids.insert(item["pod"].value("uid", ""));
    }
    return uids;
  };
  std::mt19937 random(std::random_device{}());
  std::set<std::string> done;  // admissions reported done, not removed since
  int next = 0;
  int admissions_done = 0;
  int temporaries_left = 0;  // by the kills, removed at the restarts
  const int kills = testing::FaultKillCount();
  for (int kill = 0; kill < kills; ++kill) {
    std::set<std::string> admitted_now;
    std::set<std::string> removed_now;
    std::string cut_removal;  // a removal the kill cut short: done or not, either is right
    // One command a call: admit while the node has fewer than 3 pods, else remove the oldest.
    ASSERT_TRUE(testing::KillDuringCommands(*serve, random, 60, [&] {
      if (done.size() + admitted_now.size() - removed_now.size() < 3) {
        const int n = next++;
        const std::string uid = pod(n);
        const std::string manifest = PodWithClaims(uid, {claim(uid)}) +
                                     ClaimDocument(claim(uid), kGpu, absl::StrCat("dev-", n % 4));
        if (testing::PodsCommand(h, {"admit", "-"}, manifest) != 0) return false;
        admitted_now.insert(uid);
        return true;
      }
      for (const std::string& uid : done) {
        if (removed_now.count(uid) != 0) continue;
        if (testing::PodsCommand(h, {"remove", uid}) != 0) {
          cut_removal = uid;
          return false;
        }
        removed_now.insert(uid);
        return true;
      }
      return true;
    }));
    for (const std::string& uid : removed_now) done.erase(uid);
    done.insert(admitted_now.begin(), admitted_now.end());
    admissions_done += static_cast<int>(admitted_now.size());

    // What the kill left of a write in flight is gone after the restart.
    const std::set<std::filesystem::path> left = h.StateTemporaryFiles();
    temporaries_left += static_cast<int>(left.size());
    serve = h.StartServe(flags);
    ASSERT_NE(serve, nullptr) << "restart " << kill;
    for (const std::filesystem::path& path : left) {
      EXPECT_FALSE(std::filesystem::exists(path)) << path << " outlived the restart " << kill;
    }
    // Settled: each claim recorded once, for pods the node has, and every pod's claim prepared.
    std::string state;
    const bool settled = WaitFor(
        [&] {
          const std::set<std::string> pods = listed();
          const Json recorded = CheckpointClaims(h);
          const Json held = Claims(h);
          state = absl::StrCat("pods ", Json(pods).dump(), " checkpoint ", recorded.dump(),
                               " claims ", held.dump());
          if (!recorded.is_array() || recorded.size() != pods.size()) return false;
          std::set<std::string> names;
          for (const Json& entry : recorded) {
            const std::string name = entry.value("claimName", "");
            if (!names.insert(name).second) return false;
            const Json uids = entry.value("podUIDs", Json::array());
            if (uids.size() != 1 || pods.count(uids[0]) == 0 || name != claim(uids[0]))
              return false;
          }
          return AllPrepared(h, pods.size());
        },
        20s);
    ASSERT_TRUE(settled) << "after kill " << kill << ": " << state;
    const std::set<std::string> pods = listed();
    // The daemon may have finished the removal before the kill took the answer.
    if (!cut_removal.empty() && pods.count(cut_removal) == 0) done.erase(cut_removal);
    for (const std::string& uid : done) {
      ASSERT_EQ(pods.count(uid), 1u) << "lost " << uid << " after kill " << kill;
    }
    for (const std::string& uid : removed_now) {
      EXPECT_EQ(pods.count(uid), 0u) << "removed " << uid << " came back after kill " << kill;
    }
    for (const std::string& uid : pods) {
      if (done.count(uid) == 0) {
        ASSERT_EQ(h.Remove(uid).exit_code, 0) << uid;
      }
    }
  }
  std::cout << "daemon kills survived: " << kills
            << ", admissions with a claim reported done: " << admissions_done << ", lost: 0"
            << ", temporary files the kills left and the restarts removed: " << temporaries_left
            << "\n";
  EXPECT_GT(admissions_done, 0) << "no admission finished between kills: nothing was tested";
}

}  // namespace
}  // namespace devmgr
