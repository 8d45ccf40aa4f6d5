// NodeMetrics wired to a real Manager: after a fake plugin registers on kubelet.sock and a
// pod is admitted (and another refused), the text carries upstream's kubelet metric names,
// labels, help texts and buckets, and ours with the states, health and reasons they report,
// the process_* metrics and devmgr_build_info; `promtool check metrics` finds nothing wrong in
// it but the upstream names it flags on a kubelet too.
#include "node/node_metrics.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "dra/manager.h"
#include "dra/metrics.h"
#include "node/admission_refusals.h"
#include "node/claim_store.h"
#include "tests/testlib/fake_device_plugin.h"
#include "tests/testlib/subprocess.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::node {
namespace {

using ::devmgr::testing::FakeDevicePlugin;
using ::devmgr::testing::MakeDevice;
using ::devmgr::testing::ProcessResult;
using ::devmgr::testing::RunProcess;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;

constexpr char kGpu[] = "example.com/gpu";

// The value of the sample line that starts with `series` followed by a space; -1 if none.
double Sample(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, series + " ")) continue;
    double value = 0;
    return absl::SimpleAtod(line, &value) ? value : -1;
  }
  return -1;
}

// Debian's `prometheus` package installs it (scripts/install-deps.sh, test packages).
constexpr char kPromtool[] = "/usr/bin/promtool";

// What `promtool check metrics` finds wrong with `text`, one finding a line, less the ones on
// upstream's names, which promtool flags on a kubelet's /metrics alike and which dashboards need
// as they are: the PodResources counters without "_total" (kubelet_pod_resources_endpoint_
// requests_list, ...), the aligned-resources counters ending in "_count" (on component-base's
// own list of exceptions) and the topology manager's duration in "_ms". A parse error fails
// whatever it says.
std::string PromtoolFindings(const std::string& text) {
  constexpr absl::string_view kNoTotal = " counter metrics should have \"_total\" suffix";
  std::set<std::string> upstream;
  for (const char* name : {"requests_list", "requests_get_allocatable", "requests_get",
                           "errors_list", "errors_get_allocatable", "errors_get"}) {
    upstream.insert(absl::StrCat("kubelet_pod_resources_endpoint_", name, kNoTotal));
  }
  for (const char* name : {"kubelet_container_aligned_compute_resources_count",
                           "kubelet_container_aligned_compute_resources_failure_count"}) {
    upstream.insert(absl::StrCat(name, kNoTotal));
    upstream.insert(absl::StrCat(
        name, " non-histogram and non-summary metrics should not have \"_count\" suffix"));
  }
  upstream.insert(
      "kubelet_topology_manager_admission_duration_ms metric names should not contain "
      "abbreviated units");
  const ProcessResult result = RunProcess({kPromtool, "check", "metrics"}, text);
  std::string findings;
  for (absl::string_view line : absl::StrSplit(result.out + result.err, '\n', absl::SkipEmpty())) {
    if (!upstream.contains(std::string(line))) absl::StrAppend(&findings, line, "\n");
  }
  // 0: clean; 3: lint findings only (all of them upstream names, if `findings` is empty).
  if (result.exit_code != 0 && result.exit_code != 3) {
    absl::StrAppend(&findings, "promtool exited with ", result.exit_code, "\n");
  }
  return findings;
}

class DaemonMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    devicemanager::ManagerOptions options;
    options.plugin_dir = dir_.path();
    options.checkpoint_write_delay = absl::Milliseconds(1);
    options.metrics = &metrics_;
    manager_ = devicemanager::CreateManager(std::move(options));
    ASSERT_TRUE(
        manager_->Start(
                    [] {
                      return std::vector<std::string>{"uid1", "uid2"};
                    },
                    [] { return true; })
            .ok());
    metrics_.AttachManager(*manager_);
    metrics_.AttachPodResources(counters_);
    metrics_.AttachHeapTrimmer(trimmer_);

    plugin_ = std::make_unique<FakeDevicePlugin>(
        dir_.Sub("gpu.sock"), kGpu,
        std::vector<v1beta1::Device>{MakeDevice("g0"), MakeDevice("g1"), MakeDevice("g2", false)});
    ASSERT_TRUE(plugin_->Start().ok());
    ASSERT_TRUE(plugin_->Register(dir_.Sub("kubelet.sock")).ok());
    ASSERT_TRUE(WaitFor([&] { return manager_->GetCapacity().capacity[kGpu] == 3; }));
  }

  devicemanager::Pod MakePod(const std::string& uid, int64_t gpus) {
    return devicemanager::Pod{uid,
                              "default",
                              "pod-" + uid,
                              {},
                              {{"c", devicemanager::ContainerType::kRegular, {{kGpu, gpus}}}}};
  }

  TempDir dir_;
  HeapTrimmer trimmer_{{.quiet = absl::Milliseconds(10), .max_delay = absl::Seconds(1)}};
  // Declared before the manager, which reports to it until it is destroyed.
  NodeMetrics metrics_;
  podresources::Counters counters_;
  devicemanager::ManagerPtr manager_;
  std::unique_ptr<FakeDevicePlugin> plugin_;
};

TEST_F(DaemonMetricsTest, ExportsUpstreamDevicePluginMetricsAfterRegistrationAndAllocation) {
  devicemanager::Pod pod = MakePod("uid1", 1);
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  const std::string text = metrics_.Render();

  EXPECT_TRUE(absl::StrContains(
      text,
      "# HELP kubelet_device_plugin_registration_total [ALPHA] Cumulative number of device "
      "plugin registrations. Broken down by resource name.\n"
      "# TYPE kubelet_device_plugin_registration_total counter\n"
      "kubelet_device_plugin_registration_total{resource_name=\"example.com/gpu\"} 1\n"))
      << text;
  EXPECT_TRUE(absl::StrContains(
      text,
      "# HELP kubelet_device_plugin_alloc_duration_seconds [ALPHA] Duration in seconds to serve "
      "a device plugin Allocation request. Broken down by resource name.\n"
      "# TYPE kubelet_device_plugin_alloc_duration_seconds histogram\n"))
      << text;
  // prometheus.DefBuckets, then +Inf; the one call lands in one of them and stays counted.
  const std::string bucket =
      "kubelet_device_plugin_alloc_duration_seconds_bucket{resource_name=\"example.com/gpu\",le=";
  double previous = 0;
  for (const char* le :
       {"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"}) {
    const double count = Sample(text, absl::StrCat(bucket, "\"", le, "\"}"));
    EXPECT_GE(count, previous) << le << "\n" << text;
    previous = count;
  }
  EXPECT_EQ(previous, 1);
  EXPECT_EQ(Sample(text,
                   "kubelet_device_plugin_alloc_duration_seconds_count{resource_name="
                   "\"example.com/gpu\"}"),
            1);
  EXPECT_GT(Sample(text,
                   "kubelet_device_plugin_alloc_duration_seconds_sum{resource_name="
                   "\"example.com/gpu\"}"),
            0);
  // The admission wrote the checkpoint durably.
  EXPECT_GE(Sample(text, "devmgr_checkpoint_write_duration_seconds_count"), 1);
  EXPECT_EQ(Sample(text, "devmgr_checkpoint_write_errors_total"), 0);
}

TEST_F(DaemonMetricsTest, TrimsTheHeapAfterCheckpointWritesAndExportsTheCount) {
  devicemanager::Pod pod = MakePod("uid1", 1);
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  // Registration and the admission each wrote the checkpoint; the trimmer heard of it.
  ASSERT_TRUE(WaitFor([&] { return trimmer_.trims() >= 1; }));
  EXPECT_TRUE(absl::StrContains(metrics_.Render(),
                                "# TYPE devmgr_heap_trims_total counter\ndevmgr_heap_trims_total "))
      << metrics_.Render();
  EXPECT_GE(Sample(metrics_.Render(), "devmgr_heap_trims_total"), 1);
  EXPECT_GT(Sample(metrics_.Render(), "devmgr_heap_trim_seconds_total"), 0);
}

TEST_F(DaemonMetricsTest, ExportsEndpointStatesDeviceHealthAndRefusals) {
  devicemanager::Pod greedy = MakePod("uid2", 3);  // only two are healthy
  EXPECT_FALSE(manager_->Allocate(greedy, greedy.containers[0]).ok());
  std::string text = metrics_.Render();

  const std::string state =
      "devmgr_device_plugin_endpoint_state{resource_name=\"example.com/gpu\",";
  EXPECT_EQ(Sample(text, state + "state=\"running\"}"), 1) << text;
  EXPECT_EQ(Sample(text, state + "state=\"stopped\"}"), 0);
  EXPECT_EQ(Sample(text, state + "state=\"expired\"}"), 0);
  EXPECT_EQ(Sample(text,
                   "devmgr_device_plugin_devices{health=\"healthy\",resource_name="
                   "\"example.com/gpu\"}"),
            2);
  EXPECT_EQ(Sample(text,
                   "devmgr_device_plugin_devices{health=\"unhealthy\",resource_name="
                   "\"example.com/gpu\"}"),
            1);
  EXPECT_EQ(Sample(text, "devmgr_admissions_refused_total{reason=\"not_enough_devices\"}"), 1);
  for (const absl::string_view reason : devicemanager::kAdmissionRefusalReasons) {
    EXPECT_GE(
        Sample(text, absl::StrCat("devmgr_admissions_refused_total{reason=\"", reason, "\"}")), 0)
        << reason;
  }
  for (const absl::string_view reason : kDaemonRefusalReasons) {
    EXPECT_EQ(
        Sample(text, absl::StrCat("devmgr_admissions_refused_total{reason=\"", reason, "\"}")), 0)
        << reason;
  }

  // The plugin goes away: its endpoint is stopped and every device unhealthy. The manager
  // changes both at once, but a render reads the devices before the endpoint states, so one
  // render can see the stream end between the two: wait for a render that saw it before both.
  plugin_->Stop();
  const std::string unhealthy =
      "devmgr_device_plugin_devices{health=\"unhealthy\",resource_name=\"example.com/gpu\"}";
  EXPECT_TRUE(WaitFor([&] {
    text = metrics_.Render();
    return Sample(text, state + "state=\"stopped\"}") == 1 && Sample(text, unhealthy) == 3;
  })) << text;
  EXPECT_EQ(Sample(text, state + "state=\"running\"}"), 0);
  EXPECT_EQ(Sample(text, unhealthy), 3);
}

TEST_F(DaemonMetricsTest, ExportsProcessMetricsAndBuildInfo) {
  const std::string text = metrics_.Render();
  for (const char* family : {"process_cpu_seconds_total", "process_open_fds", "process_max_fds",
                             "process_virtual_memory_bytes", "process_virtual_memory_max_bytes",
                             "process_resident_memory_bytes", "process_start_time_seconds"}) {
    EXPECT_GE(Sample(text, family), 0) << family << "\n" << text;
  }
  EXPECT_TRUE(
      absl::StrContains(text, "# TYPE devmgr_build_info gauge\ndevmgr_build_info{compiler="))
      << text;
}

TEST_F(DaemonMetricsTest, PromtoolFindsTheWholeTextClean) {
  if (!std::filesystem::exists(kPromtool)) {
    GTEST_SKIP() << kPromtool << " is not installed (Debian's prometheus package)";
  }
  devicemanager::Pod pod = MakePod("uid1", 1);
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  devicemanager::Pod greedy = MakePod("uid2", 3);
  EXPECT_FALSE(manager_->Allocate(greedy, greedy.containers[0]).ok());
  metrics_.HealthUpdateTaken(2);
  counters_.v1.requests_total = 3;
  const std::string text = metrics_.Render();
  EXPECT_EQ(PromtoolFindings(text), "") << text;
}

TEST_F(DaemonMetricsTest, ExportsPodResourcesCountersPerServerApiVersion) {
  counters_.v1.requests_total = 5;
  counters_.v1.requests_list = 3;
  counters_.v1.requests_get = 2;
  counters_.v1.errors_get = 1;
  counters_.v1alpha1.requests_total = 4;
  counters_.rate_limited = 6;
  counters_.watch_streams_opened = 7;
  const std::string text = metrics_.Render();

  EXPECT_TRUE(absl::StrContains(
      text,
      "# HELP kubelet_pod_resources_endpoint_requests_total [ALPHA] Cumulative number of "
      "requests to the PodResource endpoint. Broken down by server api version.\n"
      "# TYPE kubelet_pod_resources_endpoint_requests_total counter\n"
      "kubelet_pod_resources_endpoint_requests_total{server_api_version=\"v1\"} 5\n"
      "kubelet_pod_resources_endpoint_requests_total{server_api_version=\"v1alpha1\"} 4\n"))
      << text;
  const std::string v1 = "{server_api_version=\"v1\"}";
  EXPECT_EQ(Sample(text, "kubelet_pod_resources_endpoint_requests_list" + v1), 3);
  EXPECT_EQ(Sample(text, "kubelet_pod_resources_endpoint_requests_get_allocatable" + v1), 0);
  EXPECT_EQ(Sample(text, "kubelet_pod_resources_endpoint_requests_get" + v1), 2);
  EXPECT_EQ(Sample(text, "kubelet_pod_resources_endpoint_errors_list" + v1), 0);
  EXPECT_EQ(Sample(text, "kubelet_pod_resources_endpoint_errors_get_allocatable" + v1), 0);
  EXPECT_EQ(Sample(text, "kubelet_pod_resources_endpoint_errors_get" + v1), 1);
  // v1alpha1 has only List, and upstream counts only its requests_total.
  EXPECT_EQ(Sample(text,
                   "kubelet_pod_resources_endpoint_requests_list{server_api_version="
                   "\"v1alpha1\"}"),
            -1);
  EXPECT_EQ(Sample(text, "devmgr_pod_resources_rate_limited_total"), 6);
  EXPECT_EQ(Sample(text, "devmgr_pod_resources_watch_streams_opened_total"), 7);
  EXPECT_EQ(Sample(text, "devmgr_pod_resources_watch_streams_ended_slow_total"), 0);
}

// The kubelet's DRA metrics under their upstream names, labels and help texts: each operation
// by outcome, each driver call by full method and Go's code name, and the claims in use.
// Upstream's topology manager metrics: names, help texts, the duration's buckets in whole
// milliseconds, and the aligned counters of both scopes from 0.
TEST(NodeMetricsTopologyTest, ExportsTheKubeletTopologyManagerMetrics) {
  NodeMetrics metrics;
  std::string text = metrics.Render();
  EXPECT_EQ(Sample(text, "kubelet_topology_manager_admission_requests_total"), 0) << text;
  for (const char* scope : {"container", "pod"}) {
    for (const char* name : {"count", "failure_count"}) {
      EXPECT_EQ(Sample(text, absl::StrCat("kubelet_container_aligned_compute_resources_", name,
                                          "{boundary=\"numa_node\",scope=\"", scope, "\"}")),
                0)
          << name << " " << scope << "\n"
          << text;
    }
  }
  EXPECT_TRUE(absl::StrContains(text,
                                "# HELP kubelet_topology_manager_admission_errors_total [ALPHA] "
                                "The number of admission request failures where resources could "
                                "not be aligned.\n"))
      << text;

  metrics.AdmissionDone(false, absl::Microseconds(1999));
  metrics.AdmissionDone(true, absl::Milliseconds(3));
  metrics.AlignmentDone(topologymanager::TopologyScope::kPod, true);
  metrics.AlignmentDone(topologymanager::TopologyScope::kContainer, false);
  text = metrics.Render();
  EXPECT_EQ(Sample(text, "kubelet_topology_manager_admission_requests_total"), 2);
  EXPECT_EQ(Sample(text, "kubelet_topology_manager_admission_errors_total"), 1);
  // 1.999 ms counts as 1, as upstream's Milliseconds() truncates.
  EXPECT_EQ(Sample(text, "kubelet_topology_manager_admission_duration_ms_sum"), 4);
  EXPECT_EQ(Sample(text, "kubelet_topology_manager_admission_duration_ms_bucket{le=\"0.05\"}"), 0);
  EXPECT_EQ(Sample(text, "kubelet_topology_manager_admission_duration_ms_bucket{le=\"1.6\"}"), 1);
  EXPECT_EQ(Sample(text, "kubelet_topology_manager_admission_duration_ms_bucket{le=\"819.2\"}"), 2);
  EXPECT_EQ(Sample(text,
                   "kubelet_container_aligned_compute_resources_count{boundary=\"numa_"
                   "node\",scope=\"pod\"}"),
            1);
  EXPECT_EQ(Sample(text,
                   "kubelet_container_aligned_compute_resources_failure_count{boundary="
                   "\"numa_node\",scope=\"container\"}"),
            1);
}

// The API client's metrics under client-go's names, labels, help texts and buckets, as
// component-base's restclient package exports them from a kubelet.
TEST(NodeMetricsRestClientTest, ExportsClientGosRestClientMetrics) {
  NodeMetrics metrics;
  metrics.TryDone("GET", "10.0.0.1:6443", "429", false);
  metrics.TryDone("GET", "10.0.0.1:6443", "200", true);
  metrics.TryDone("DELETE", "10.0.0.1:6443", "<error>", false);
  metrics.RequestDone("GET", "10.0.0.1:6443", absl::Milliseconds(30));
  metrics.Throttled("GET", "10.0.0.1:6443", absl::ZeroDuration());
  metrics.Throttled("GET", "10.0.0.1:6443", absl::Seconds(2));
  metrics.RequestSent("POST", "10.0.0.1:6443", 300);
  metrics.ResponseRead("POST", "10.0.0.1:6443", 70000);
  metrics.ExecPluginCalled(0, "no_error");
  metrics.ExecPluginCalled(3, "plugin_execution_error");
  const std::string text = metrics.Render();
  for (const char* help :
       {"# HELP rest_client_requests_total [ALPHA] Number of HTTP requests, partitioned by "
        "status code, method, and host.\n",
        "# HELP rest_client_request_retries_total [ALPHA] Number of request retries, "
        "partitioned by status code, verb, and host.\n",
        "# HELP rest_client_request_duration_seconds [ALPHA] Request latency in seconds. Broken "
        "down by verb, and host.\n",
        "# HELP rest_client_rate_limiter_duration_seconds [ALPHA] Client side rate limiter "
        "latency in seconds. Broken down by verb, and host.\n",
        "# HELP rest_client_request_size_bytes [ALPHA] Request size in bytes. Broken down by verb "
        "and host.\n",
        "# HELP rest_client_response_size_bytes [ALPHA] Response size in bytes. Broken down by "
        "verb and host.\n",
        "# HELP rest_client_exec_plugin_call_total [ALPHA] Number of calls to an exec plugin, "
        "partitioned by the type of event encountered (no_error, plugin_execution_error, "
        "plugin_not_found_error, client_internal_error) and an optional exit code. The exit "
        "code will be set to 0 if and only if the plugin call was successful.\n"}) {
    EXPECT_TRUE(absl::StrContains(text, help)) << help << "\n" << text;
  }
  EXPECT_EQ(Sample(text,
                   "rest_client_requests_total{code=\"429\",host=\"10.0.0.1:6443\","
                   "method=\"GET\"}"),
            1);
  EXPECT_EQ(Sample(text,
                   "rest_client_requests_total{code=\"200\",host=\"10.0.0.1:6443\","
                   "method=\"GET\"}"),
            1);
  EXPECT_EQ(Sample(text,
                   "rest_client_requests_total{code=\"<error>\",host=\"10.0.0.1:6443\","
                   "method=\"DELETE\"}"),
            1);
  EXPECT_EQ(Sample(text,
                   "rest_client_request_retries_total{code=\"200\",host=\"10.0.0.1:"
                   "6443\",verb=\"GET\"}"),
            1);
  EXPECT_FALSE(absl::StrContains(text, "rest_client_request_retries_total{code=\"429\""));
  EXPECT_EQ(Sample(text,
                   "rest_client_request_duration_seconds_bucket{host=\"10.0.0.1:6443\","
                   "verb=\"GET\",le=\"0.025\"}"),
            0);
  EXPECT_EQ(Sample(text,
                   "rest_client_request_duration_seconds_bucket{host=\"10.0.0.1:6443\","
                   "verb=\"GET\",le=\"0.1\"}"),
            1);
  EXPECT_EQ(Sample(text,
                   "rest_client_rate_limiter_duration_seconds_bucket{host=\"10.0.0.1:"
                   "6443\",verb=\"GET\",le=\"0.005\"}"),
            1);
  EXPECT_EQ(Sample(text,
                   "rest_client_rate_limiter_duration_seconds_bucket{host=\"10.0.0.1:"
                   "6443\",verb=\"GET\",le=\"2\"}"),
            2);
  EXPECT_EQ(Sample(text,
                   "rest_client_rate_limiter_duration_seconds_bucket{host=\"10.0.0.1:"
                   "6443\",verb=\"GET\",le=\"60\"}"),
            2);
  const std::string request_size =
      "rest_client_request_size_bytes_bucket{host=\"10.0.0.1:6443\",verb=\"POST\",le=";
  EXPECT_EQ(Sample(text, absl::StrCat(request_size, "\"256\"}")), 0);
  EXPECT_EQ(Sample(text, absl::StrCat(request_size, "\"512\"}")), 1);
  const std::string response_size =
      "rest_client_response_size_bytes_bucket{host=\"10.0.0.1:6443\",verb=\"POST\",le=";
  EXPECT_EQ(Sample(text, absl::StrCat(response_size, "\"65536\"}")), 0);
  EXPECT_EQ(Sample(text, absl::StrCat(response_size, "\"262144\"}")), 1);
  EXPECT_EQ(Sample(text, absl::StrCat(response_size, "\"1.6777216e+07\"}")), 1);
  EXPECT_EQ(Sample(text,
                   "rest_client_exec_plugin_call_total{call_status=\"no_error\",code="
                   "\"0\"}"),
            1);
  EXPECT_EQ(Sample(text,
                   "rest_client_exec_plugin_call_total{call_status=\"plugin_execution_"
                   "error\",code=\"3\"}"),
            1);
}

// A watcher whose states the test sets.
class StatesOnlyWatcher final : public pluginwatcher::Watcher {
 public:
  void AddHandler(absl::string_view /*type*/, pluginwatcher::PluginHandler& /*handler*/) override {}
  absl::Status Start() override { return absl::OkStatus(); }
  void Stop() override {}
  std::vector<pluginwatcher::DesiredPlugin> GetPluginsToRegister() const override {
    return desired;
  }
  std::vector<pluginwatcher::RegisteredPlugin> GetRegisteredPlugins() const override {
    return registered;
  }

  std::vector<pluginwatcher::DesiredPlugin> desired;
  std::vector<pluginwatcher::RegisteredPlugin> registered;
};

// Upstream's plugin manager metric: each socket once in the desired state, and once more in the
// actual state when it is registered, read at each scrape.
TEST(NodeMetricsPluginWatcherTest, ExportsThePluginManagersPlugins) {
  NodeMetrics metrics;
  StatesOnlyWatcher watcher;
  metrics.AttachPluginWatcher(watcher);
  EXPECT_FALSE(absl::StrContains(metrics.Render(), "plugin_manager_total_plugins{"));
  watcher.desired = {{"/r/plugins_registry/a.sock", absl::Now()},
                     {"/r/plugins_registry/b.sock", absl::Now()}};
  watcher.registered = {{"/r/plugins_registry/a.sock", absl::Now(), "DRAPlugin", "a", "/r/a"}};
  const std::string text = metrics.Render();
  EXPECT_TRUE(absl::StrContains(text,
                                "# HELP plugin_manager_total_plugins [ALPHA] Number of plugins in "
                                "Plugin Manager\n# TYPE plugin_manager_total_plugins gauge\n"))
      << text;
  EXPECT_EQ(Sample(text,
                   "plugin_manager_total_plugins{socket_path=\"/r/plugins_registry/a.sock\","
                   "state=\"actual_state_of_world\"}"),
            1);
  EXPECT_EQ(Sample(text,
                   "plugin_manager_total_plugins{socket_path=\"/r/plugins_registry/a.sock\","
                   "state=\"desired_state_of_world\"}"),
            1);
  EXPECT_EQ(Sample(text,
                   "plugin_manager_total_plugins{socket_path=\"/r/plugins_registry/b.sock\","
                   "state=\"desired_state_of_world\"}"),
            1);
  EXPECT_FALSE(absl::StrContains(
      text, "socket_path=\"/r/plugins_registry/b.sock\",state=\"actual_state_of_world\""));
  if (std::filesystem::exists(kPromtool)) {
    EXPECT_EQ(PromtoolFindings(text), "") << text;
  }
}

TEST(NodeMetricsDraTest, ExportsTheKubeletDraMetrics) {
  TempDir dir;
  NodeMetrics metrics;
  ClaimStore claims(dir.path(), nullptr);
  dra::ManagerOptions options;
  options.state_dir = dir.path();
  options.claims = &claims;
  options.metrics = &metrics;
  absl::StatusOr<std::unique_ptr<dra::Manager>> manager = dra::Manager::Create(options);
  ASSERT_TRUE(manager.ok()) << manager.status();
  metrics.AttachDraManager(**manager);
  dra::Pod pod;
  pod.uid = "p1";
  pod.namespace_name = "default";
  pod.name = "p";
  pod.resource_claims.push_back({"gpu", std::string("missing"), std::nullopt});
  EXPECT_FALSE((*manager)->PrepareResources(pod).ok());
  metrics.DriverCallDone("gpu.example.com",
                         dra::GrpcMethod("v1beta1.DRAPlugin", "NodePrepareResources"),
                         absl::StatusCode::kDeadlineExceeded, absl::Seconds(45));

  const std::string text = metrics.Render();
  EXPECT_TRUE(absl::StrContains(text,
                                "# HELP dra_operations_duration_seconds [ALPHA] Latency "
                                "histogram in seconds for the duration of handling all "
                                "ResourceClaims referenced by a pod"))
      << text;
  EXPECT_EQ(Sample(text,
                   "dra_operations_duration_seconds_count{is_error=\"true\","
                   "operation_name=\"PrepareResources\"}"),
            1);
  EXPECT_EQ(Sample(text,
                   "dra_grpc_operations_duration_seconds_count{driver_name=\"gpu.example."
                   "com\",grpc_status_code=\"DeadlineExceeded\",method_name=\"/k8s.io."
                   "kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources\"}"),
            1);
  // Upstream's DRADurationBuckets, each bound written as a kubelet writes it (the strings a
  // query's le="..." matches), which Go printed for metrics.ExponentialBucketsRange(.1, 40, 15).
  const std::string bucket_prefix =
      "dra_grpc_operations_duration_seconds_bucket{driver_name=\"gpu.example.com\","
      "grpc_status_code=\"DeadlineExceeded\",method_name=\"/k8s.io.kubelet.pkg.apis.dra."
      "v1beta1.DRAPlugin/NodePrepareResources\",le=\"";
  std::vector<std::string> bounds;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, bucket_prefix)) continue;
    const size_t end = line.find('"');
    bounds.emplace_back(line.substr(0, end));
    EXPECT_EQ(line.substr(end), bounds.back() == "+Inf" ? "\"} 1" : "\"} 0") << line;
  }
  EXPECT_EQ(bounds, (std::vector<std::string>{
                        "0.1", "0.1534127404634391", "0.23535468936502524", "0.36106407876409946",
                        "0.5539182980610752", "0.849781240983936", "1.303672689737678",
                        "1.9999999999999993", "3.0682548092687805", "4.7070937873005025",
                        "7.221281575281985", "11.078365961221499", "16.995624819678714",
                        "26.07345379475354", "39.99999999999997", "+Inf"}))
      << text;
  EXPECT_TRUE(absl::StrContains(text, "# TYPE dra_resource_claims_in_use gauge")) << text;
  EXPECT_EQ(Sample(text, "dra_resource_claims_in_use{driver_name=\"<any>\"}"), 0);
  if (std::filesystem::exists(kPromtool)) {
    EXPECT_EQ(PromtoolFindings(text), "") << text;
  }
}

}  // namespace
}  // namespace devmgr::node
