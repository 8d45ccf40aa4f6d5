// A node in a cluster, through the real binaries: `devmgr serve --kubeconfig`, a DRA driver
// `devmgr plugin fake-dra --kubeconfig --node-name` and `devmgr slices --kubeconfig`, against
// the fake API server of tests/testlib (a fake: HTTPS with the API server's rules for the calls
// devmgr makes, not a real one; the suite against a real cluster is real_cluster_test.cc). The
// node wipes its stale ResourceSlices at start; the driver publishes its devices owned by the
// Node, as a Go driver on kubeletplugin does; claims come from the cluster, where the scheduler
// allocated and reserved them; the driver's slices go once it has been gone for the wiping
// delay; the command line reports a wrong kubeconfig, a refused token and a missing server, and
// gets its token from a kubeconfig's credential plugin.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/metrics_scrape.h"
#include "nlohmann/json.hpp"
#include "tests/integration/daemon_harness.h"
#include "tests/testlib/fake_api_server.h"
#include "tests/testlib/wait_for.h"

namespace devmgr {
namespace {

using Json = nlohmann::json;
using testing::DaemonHarness;
using testing::FakeApiServer;
using testing::FakeApiServerOptions;
using testing::WaitFor;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr char kGpu[] = "gpu.example.com";
constexpr char kNode[] = "worker-1";
constexpr char kNodeUid[] = "9f6d2c8e-worker-1";

FakeApiServerOptions WithToken() {
  FakeApiServerOptions options;
  options.token = "node-token";
  return options;
}

Json Slice(const std::string& name, const std::string& node) {
  return {{"kind", "ResourceSlice"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"driver", kGpu},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", {{{"name", "old"}}}}}}};
}

// The driver's slices for the node, as the server has them.
std::vector<Json> DriverSlices(const FakeApiServer& server) {
  std::vector<Json> out;
  for (const Json& slice : server.Slices()) {
    if (slice["spec"]["driver"] == kGpu && slice["spec"].value("nodeName", "") == kNode) {
      out.push_back(slice);
    }
  }
  return out;
}

// A claim the scheduler allocated (device `device` of the node's pool) and reserved for pod
// `pod_uid`.
Json AllocatedClaim(const std::string& name, const std::string& device,
                    const std::string& pod_uid) {
  return {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"name", name}, {"namespace", "default"}}},
      {"spec",
       {{"devices",
         {{"requests", {{{"name", "gpu"}, {"exactly", {{"deviceClassName", kGpu}}}}}}}}}},
      {"status",
       {{"allocation",
         {{"devices",
           {{"results",
             {{{"request", "gpu"}, {"driver", kGpu}, {"pool", kNode}, {"device", device}}}}}}}},
        {"reservedFor", {{{"resource", "pods"}, {"name", "pod-" + pod_uid}, {"uid", pod_uid}}}}}}};
}

std::string PodUsing(const std::string& uid, const std::string& claim) {
  return absl::StrCat("metadata: {name: pod-", uid, ", namespace: default, uid: ", uid,
                      "}\nspec:\n  resourceClaims:\n  - {name: gpu, resourceClaimName: ", claim,
                      "}\n  containers: [{name: app, resources: {claims: [{name: gpu}]}}]\n");
}

TEST(ClusterTest, ANodeAndItsDriverWorkWithTheClustersClaimsAndSlices) {
  FakeApiServer server(WithToken());
  server.AddNode(kNode, kNodeUid);
  server.AddSlice(Slice("stale", kNode));
  server.AddSlice(Slice("elsewhere", "worker-2"));
  DaemonHarness h;
  const std::string kubeconfig = h.Path("kubeconfig").string();
  server.WriteKubeconfig(kubeconfig);

  const std::filesystem::path metrics = h.Path("metrics.sock");
  auto serve = h.StartServe({"--kubeconfig", kubeconfig, "--node-name", kNode, "--dra-sync-period",
                             "100ms", "--dra-wiping-delay", "300ms", "--metrics-address",
                             "unix:" + metrics.string()});
  ASSERT_NE(serve, nullptr);
  // A kubelet wipes its node's slices when it starts: nothing may be allocated from them
  // before their driver is back.
  ASSERT_TRUE(WaitFor([&] { return DriverSlices(server).empty(); }, 20s));
  // Its API client loaded libcurl (ServeTest.ADaemonWithoutAClusterNeverLoadsLibcurl: only then).
  EXPECT_TRUE(DaemonHarness::MapsLibrary(h.DaemonPid(), "libcurl"));
  EXPECT_EQ(server.Slices().size(), 1u);
  EXPECT_EQ(server.CountRequests("DELETE",
                                 "/apis/resource.k8s.io/v1/resourceslices?"
                                 "fieldSelector=spec.nodeName%3Dworker-1"),
            1);
  // And counted it as a kubelet's client-go does, once its answer is read (the server counts
  // the request before the daemon has the answer).
  const std::string counted =
      absl::StrCat("rest_client_requests_total{code=\"200\",host=\"",
                   absl::StripPrefix(server.url(), "https://"), "\",method=\"DELETE\"} 1");
  absl::StatusOr<std::string> scraped;
  EXPECT_TRUE(WaitFor([&] {
    scraped = ScrapeMetrics(metrics);
    return scraped.ok() && absl::StrContains(*scraped, counted);
  })) << (scraped.ok() ? *scraped : scraped.status().ToString());

  auto gpu = h.StartDraDriver(kGpu, 3, {"--kubeconfig", kubeconfig, "--node-name", kNode});
  ASSERT_TRUE(WaitFor([&] { return absl::StrContains(gpu->err(), "registered=true"); }, 20s))
      << gpu->err();
  ASSERT_TRUE(WaitFor([&] { return DriverSlices(server).size() == 1; }, 20s)) << gpu->err();
  const Json published = DriverSlices(server)[0];
  const std::string name = published["metadata"]["name"];
  EXPECT_TRUE(absl::StartsWith(name, "00000-gpu.example.com-worker-1-")) << name;
  EXPECT_EQ(published["spec"]["devices"].size(), 3u);
  EXPECT_EQ(published["spec"]["pool"]["name"], kNode);
  EXPECT_EQ(published["metadata"]["ownerReferences"][0]["uid"], kNodeUid);
  EXPECT_EQ(published["metadata"]["ownerReferences"][0]["kind"], "Node");

  // `devmgr slices` reads the cluster.
  const testing::ProcessResult listed =
      h.Run({"slices", "list", "--kubeconfig", kubeconfig, "--node", kNode, "-o", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const Json items = Json::parse(listed.out, nullptr, false)["items"];
  ASSERT_EQ(items.size(), 1u) << listed.out;
  EXPECT_EQ(items[0]["metadata"]["name"], name);
  const testing::ProcessResult table = h.Run({"slices", "list", "--kubeconfig", kubeconfig});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(absl::StrContains(table.out, "elsewhere")) << table.out;
  const testing::ProcessResult yaml =
      h.Run({"slices", "get", name, "--kubeconfig", kubeconfig, "-o", "yaml"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  EXPECT_TRUE(absl::StrContains(yaml.out, "driver: gpu.example.com")) << yaml.out;
  EXPECT_TRUE(absl::StrContains(yaml.out, "name: dev-2")) << yaml.out;
  const testing::ProcessResult missing =
      h.Run({"slices", "get", "nope", "--kubeconfig", kubeconfig});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(missing.err, "resourceslices.resource.k8s.io \"nope\" not found"))
      << missing.err;
  // An empty name is bad usage, as kubectl's "resource name may not be empty"; before, it was
  // looked up and not found (exit 1).
  const testing::ProcessResult unnamed = h.Run({"slices", "get", "", "--kubeconfig", kubeconfig});
  EXPECT_EQ(unnamed.exit_code, 2) << unnamed.err;
  EXPECT_EQ(unnamed.err, "devmgr: a ResourceSlice's name may not be empty\n");

  // A pod whose claim the scheduler allocated in the cluster: the node and the driver both read
  // it from the API server.
  server.AddClaim(AllocatedClaim("gpus", "dev-1", "p1"));
  const testing::ProcessResult admitted = h.Admit(PodUsing("p1", "gpus"));
  ASSERT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_TRUE(absl::StrContains(admitted.out, "gpu.example.com/device=dev-1")) << admitted.out;
  EXPECT_GE(server.CountRequests("GET",
                                 "/apis/resource.k8s.io/v1/namespaces/default/"
                                 "resourceclaims/gpus"),
            2);
  ASSERT_EQ(h.Remove("p1").exit_code, 0);

  // A claim the cluster has not allocated, and one reserved for another pod, are refused.
  Json unallocated = AllocatedClaim("later", "dev-2", "p2");
  unallocated["status"].erase("allocation");
  server.AddClaim(unallocated);
  const testing::ProcessResult refused = h.Admit(PodUsing("p2", "later"));
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_TRUE(absl::StrContains(refused.err, "not allocated")) << refused.err;
  server.AddClaim(AllocatedClaim("theirs", "dev-2", "someone-else"));
  const testing::ProcessResult not_reserved = h.Admit(PodUsing("p3", "theirs"));
  EXPECT_EQ(not_reserved.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(not_reserved.err, "is not allowed to use ResourceClaim"))
      << not_reserved.err;

  // The driver goes; after the wiping delay, so do its slices (the other node's stay).
  DaemonHarness::Stop(*gpu);
  EXPECT_TRUE(WaitFor([&] { return DriverSlices(server).empty(); }, 20s));
  EXPECT_EQ(server.Slices().size(), 1u);
}

TEST(ClusterTest, TheCommandLineSaysWhatIsWrongWithTheCluster) {
  DaemonHarness h;
  const testing::ProcessResult no_file =
      h.Run({"slices", "list", "--kubeconfig", h.Path("missing").string()});
  EXPECT_EQ(no_file.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(no_file.err, "cannot read kubeconfig")) << no_file.err;
  // A context without a kubeconfig names nothing: before, it was ignored and the daemon's store
  // was read.
  if (std::getenv("KUBECONFIG") == nullptr) {  // NOLINT(concurrency-mt-unsafe): no setenv here
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"slices", "list", "--context", "other"},
          std::vector<std::string>{"slices", "list", "--context", "other", "--root-dir",
                                   h.Root()}}) {
      const testing::ProcessResult context_alone = h.Run(args);
      EXPECT_EQ(context_alone.exit_code, 2) << absl::StrJoin(args, " ");
      EXPECT_TRUE(absl::StrContains(context_alone.err,
                                    "context \"other\" is not in a kubeconfig: none is given "
                                    "(--kubeconfig or KUBECONFIG)"))
          << context_alone.err;
    }
  }

  // A token the server does not take (expired, revoked).
  FakeApiServer server(WithToken());
  const std::string kubeconfig = h.Path("kubeconfig").string();
  server.WriteKubeconfig(kubeconfig);
  std::string text;
  {
    std::ifstream in(kubeconfig);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  text.replace(text.find("node-token"), std::string("node-token").size(), "revoked");
  std::ofstream(kubeconfig) << text;
  const testing::ProcessResult refused = h.Run({"slices", "list", "--kubeconfig", kubeconfig});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(refused.err, "UNAUTHENTICATED: Unauthorized")) << refused.err;

  // A server that is gone.
  std::string gone_kubeconfig;
  {
    FakeApiServer gone;
    gone_kubeconfig = h.Path("gone").string();
    gone.WriteKubeconfig(gone_kubeconfig);
  }
  const testing::ProcessResult unreachable =
      h.Run({"slices", "list", "--kubeconfig", gone_kubeconfig});
  EXPECT_EQ(unreachable.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(unreachable.err, "cannot reach the API server")) << unreachable.err;

  // serve refuses a kubeconfig it cannot read before it starts anything.
  const testing::ProcessResult serve =
      h.Run({"serve", "--root-dir", h.Root(), "--kubeconfig", h.Path("missing").string()});
  EXPECT_EQ(serve.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(serve.err, "cannot read kubeconfig")) << serve.err;
}

// A cloud cluster's kubeconfig gets its token from a credential plugin (aws eks get-token,
// gke-gcloud-auth-plugin): `devmgr slices` runs it as kubectl does (`serve` and the drivers
// share its client), with the user's env and KUBERNETES_EXEC_INFO, and says clearly when it
// fails.
TEST(ClusterTest, AKubeconfigWhoseUserRunsACredentialPluginWorks) {
  DaemonHarness h;
  FakeApiServer server(WithToken());
  server.AddSlice(Slice("theirs", "worker-2"));
  const std::string kubeconfig = h.Path("kubeconfig").string();
  server.WriteKubeconfig(kubeconfig);
  std::string text;
  {
    std::ifstream in(kubeconfig);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  text.replace(text.find("      token: node-token\n"),
               std::string("      token: node-token\n").size(),
               "      exec:\n"
               "        apiVersion: client.authentication.k8s.io/v1beta1\n"
               "        command: ./get-token\n"
               "        env: [{name: TOKEN, value: node-token}]\n"
               "        installHint: the plugin is the test's\n");
  std::ofstream(kubeconfig) << text;
  const std::string plugin = h.Path("get-token").string();
  std::ofstream(plugin) << "#!/bin/sh\n"
                           "echo \"$KUBERNETES_EXEC_INFO\" > \"$0.info\"\n"
                           "echo '{\"kind\":\"ExecCredential\",\"apiVersion\":"
                           "\"client.authentication.k8s.io/v1beta1\",\"status\":{\"token\":\"'"
                           "\"$TOKEN\"'\"}}'\n";
  std::filesystem::permissions(plugin, std::filesystem::perms::owner_all);

  const testing::ProcessResult listed = h.Run({"slices", "list", "--kubeconfig", kubeconfig});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_TRUE(absl::StrContains(listed.out, "theirs")) << listed.out;
  std::string info;
  {
    std::ifstream in(plugin + ".info");
    std::getline(in, info);
  }
  EXPECT_EQ(info, R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1",)"
                  R"("spec":{"interactive":false}})");

  std::filesystem::remove(plugin);
  const testing::ProcessResult missing = h.Run({"slices", "list", "--kubeconfig", kubeconfig});
  EXPECT_EQ(missing.exit_code, 1);
  // A command with a slash is not looked up, so no installHint: Go's failed fork/exec.
  EXPECT_TRUE(absl::StrContains(
      missing.err, absl::StrCat("UNAUTHENTICATED: getting credentials: exec: fork/exec ", plugin,
                                ": no such file or directory")))
      << missing.err;
}

}  // namespace
}  // namespace devmgr
