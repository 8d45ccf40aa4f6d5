#include "node/node_metrics.h"

#include <prometheus/gauge.h>
#include <prometheus/metric_type.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "node/admission_refusals.h"

namespace devmgr::node {
namespace {

// What component-base puts before the help text of every ALPHA metric, as a kubelet prints it.
constexpr absl::string_view kAlpha = "[ALPHA] ";

using prometheus::MetricType;

// prometheus.DefBuckets, which upstream's allocation histogram uses.
prometheus::Histogram::BucketBoundaries DefBuckets() {
  return {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10};
}

// Upstream's DRADurationBuckets, metrics.ExponentialBucketsRange(.1, 40, 15): 0.1 s to 40 s, the
// top under the kubelet's 45 s deadline of a DRA call. The bounds are the doubles Go's math.Pow
// gives (glibc's pow differs in the last bits of six of them), so that each `le` label reads
// as a kubelet's.
prometheus::Histogram::BucketBoundaries DraDurationBuckets() {
  return {0.1,
          0.1534127404634391,
          0.23535468936502524,
          0.36106407876409946,
          0.5539182980610752,
          0.849781240983936,
          1.303672689737678,
          1.9999999999999993,
          3.0682548092687805,
          4.7070937873005025,
          7.221281575281985,
          11.078365961221499,
          16.995624819678714,
          26.07345379475354,
          39.99999999999997};
}

// A durable write syncs the file and its folder: milliseconds on SSDs, tens of them on
// spinning disks, seconds when the disk is in trouble.
prometheus::Histogram::BucketBoundaries CheckpointWriteBuckets() {
  return {.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5};
}

// client-go's rest client latencies (component-base's restclient package).
prometheus::Histogram::BucketBoundaries RestClientBuckets() {
  return {0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0};
}

// client-go's request and response sizes: 64 bytes to 16 MiB.
prometheus::Histogram::BucketBoundaries RestClientSizeBuckets() {
  return {64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216};
}

// Upstream's topology manager admission histogram, prometheus.ExponentialBuckets(.05, 2, 15), in
// milliseconds.
prometheus::Histogram::BucketBoundaries TopologyAdmissionBuckets() {
  prometheus::Histogram::BucketBoundaries bounds;
  for (double bound = .05; bounds.size() < 15; bound *= 2) bounds.push_back(bound);
  return bounds;
}

// The label values of the aligned counters: the topology manager's scopes, at the NUMA node
// boundary (the CPU manager's physical_cpu boundary has no counterpart here).
std::map<std::string, std::string> AlignmentLabels(topologymanager::TopologyScope scope) {
  return {{"scope", scope == topologymanager::TopologyScope::kPod ? "pod" : "container"},
          {"boundary", "numa_node"}};
}

struct PodResourcesCounter {
  absl::string_view name;
  absl::string_view help;
  std::atomic<uint64_t> podresources::VersionCounters::*value;
  // v1alpha1 has only List, and its server counts only requests_total, as upstream's.
  bool in_v1alpha1;
};

// pkg/kubelet/metrics/metrics.go, PodResourcesEndpoint*: names and help texts as upstream.
constexpr std::array<PodResourcesCounter, 7> kPodResourcesCounters = {{
    {"kubelet_pod_resources_endpoint_requests_total",
     "Cumulative number of requests to the PodResource endpoint. Broken down by server api "
     "version.",
     &podresources::VersionCounters::requests_total, true},
    {"kubelet_pod_resources_endpoint_requests_list",
     "Number of requests to the PodResource List endpoint. Broken down by server api version.",
     &podresources::VersionCounters::requests_list, false},
    {"kubelet_pod_resources_endpoint_requests_get_allocatable",
     "Number of requests to the PodResource GetAllocatableResources endpoint. Broken down by "
     "server api version.",
     &podresources::VersionCounters::requests_get_allocatable, false},
    {"kubelet_pod_resources_endpoint_requests_get",
     "Number of requests to the PodResource Get endpoint. Broken down by server api version.",
     &podresources::VersionCounters::requests_get, false},
    {"kubelet_pod_resources_endpoint_errors_list",
     "Number of requests to the PodResource List endpoint which returned error. Broken down by "
     "server api version.",
     &podresources::VersionCounters::errors_list, false},
    {"kubelet_pod_resources_endpoint_errors_get_allocatable",
     "Number of requests to the PodResource GetAllocatableResources endpoint which returned "
     "error. Broken down by server api version.",
     &podresources::VersionCounters::errors_get_allocatable, false},
    {"kubelet_pod_resources_endpoint_errors_get",
     "Number of requests to the PodResource Get endpoint which returned error. Broken down by "
     "server api version.",
     &podresources::VersionCounters::errors_get, false},
}};

double Read(const std::atomic<uint64_t>& counter) {
  return static_cast<double>(counter.load(std::memory_order_relaxed));
}

absl::string_view StateName(devicemanager::EndpointState state) {
  switch (state) {
    case devicemanager::EndpointState::kRunning:
      return "running";
    case devicemanager::EndpointState::kStopped:
      return "stopped";
    case devicemanager::EndpointState::kExpired:
      return "expired";
  }
  return "unknown";
}

}  // namespace

NodeMetrics::NodeMetrics()
    : registrations_(prometheus::BuildCounter()
                         .Name("kubelet_device_plugin_registration_total")
                         .Help(absl::StrCat(kAlpha,
                                            "Cumulative number of device plugin registrations. "
                                            "Broken down by resource name."))
                         .Register(registry_.registry())),
      allocation_duration_(prometheus::BuildHistogram()
                               .Name("kubelet_device_plugin_alloc_duration_seconds")
                               .Help(absl::StrCat(kAlpha,
                                                  "Duration in seconds to serve a device plugin "
                                                  "Allocation request. Broken down by resource "
                                                  "name."))
                               .Register(registry_.registry())),
      admissions_refused_(
          prometheus::BuildCounter()
              .Name("devmgr_admissions_refused_total")
              .Help("Allocate and AdmitPod calls refused, by reason (a short stable code).")
              .Register(registry_.registry())),
      // The unlabelled metrics show from the start, as client_golang's plain ones.
      checkpoint_write_duration_(
          prometheus::BuildHistogram()
              .Name("devmgr_checkpoint_write_duration_seconds")
              .Help("Duration in seconds of each durable write of the device manager checkpoint.")
              .Register(registry_.registry())
              .Add({}, CheckpointWriteBuckets())),
      checkpoint_write_errors_(
          prometheus::BuildCounter()
              .Name("devmgr_checkpoint_write_errors_total")
              .Help("Durable writes of the device manager checkpoint that failed.")
              .Register(registry_.registry())
              .Add({})),
      health_affected_containers_(prometheus::BuildCounter()
                                      .Name("devmgr_device_health_affected_containers_total")
                                      .Help("Containers holding devices of the pods named by "
                                            "each device health update (KEP-4680 "
                                            "ResourceHealthStatus).")
                                      .Register(registry_.registry())
                                      .Add({})),
      health_updates_dropped_(prometheus::BuildCounter()
                                  .Name("devmgr_device_health_updates_dropped_total")
                                  .Help("Device health updates dropped because 100 were waiting "
                                        "for the node to take them.")
                                  .Register(registry_.registry())
                                  .Add({})),
      dra_operations_duration_(
          prometheus::BuildHistogram()
              .Name("dra_operations_duration_seconds")
              .Help(absl::StrCat(
                  kAlpha,
                  "Latency histogram in seconds for the duration of handling all ResourceClaims "
                  "referenced by a pod when the pod starts or stops. Identified by the name of "
                  "the operation (PrepareResources or UnprepareResources) and separated by the "
                  "success of the operation. The number of failed operations is provided "
                  "through the histogram's overall count."))
              .Register(registry_.registry())),
      dra_grpc_duration_(
          prometheus::BuildHistogram()
              .Name("dra_grpc_operations_duration_seconds")
              .Help(absl::StrCat(kAlpha, "Duration in seconds of the DRA gRPC operations"))
              .Register(registry_.registry())),
      topology_requests_(prometheus::BuildCounter()
                             .Name("kubelet_topology_manager_admission_requests_total")
                             .Help(absl::StrCat(kAlpha,
                                                "The number of admission requests where "
                                                "resources have to be aligned."))
                             .Register(registry_.registry())
                             .Add({})),
      topology_errors_(prometheus::BuildCounter()
                           .Name("kubelet_topology_manager_admission_errors_total")
                           .Help(absl::StrCat(kAlpha,
                                              "The number of admission request failures where "
                                              "resources could not be aligned."))
                           .Register(registry_.registry())
                           .Add({})),
      topology_duration_(
          prometheus::BuildHistogram()
              .Name("kubelet_topology_manager_admission_duration_ms")
              .Help(absl::StrCat(kAlpha,
                                 "Duration in milliseconds to serve a pod admission request."))
              .Register(registry_.registry())
              .Add({}, TopologyAdmissionBuckets())),
      rest_requests_(prometheus::BuildCounter()
                         .Name("rest_client_requests_total")
                         .Help(absl::StrCat(kAlpha,
                                            "Number of HTTP requests, partitioned by status code, "
                                            "method, and host."))
                         .Register(registry_.registry())),
      rest_retries_(prometheus::BuildCounter()
                        .Name("rest_client_request_retries_total")
                        .Help(absl::StrCat(kAlpha,
                                           "Number of request retries, partitioned by status code, "
                                           "verb, and host."))
                        .Register(registry_.registry())),
      rest_duration_(prometheus::BuildHistogram()
                         .Name("rest_client_request_duration_seconds")
                         .Help(absl::StrCat(
                             kAlpha, "Request latency in seconds. Broken down by verb, and host."))
                         .Register(registry_.registry())),
      rest_rate_limiter_duration_(
          prometheus::BuildHistogram()
              .Name("rest_client_rate_limiter_duration_seconds")
              .Help(absl::StrCat(
                  kAlpha,
                  "Client side rate limiter latency in seconds. Broken down by verb, and host."))
              .Register(registry_.registry())),
      rest_request_size_(
          prometheus::BuildHistogram()
              .Name("rest_client_request_size_bytes")
              .Help(absl::StrCat(kAlpha, "Request size in bytes. Broken down by verb and host."))
              .Register(registry_.registry())),
      rest_response_size_(
          prometheus::BuildHistogram()
              .Name("rest_client_response_size_bytes")
              .Help(absl::StrCat(kAlpha, "Response size in bytes. Broken down by verb and host."))
              .Register(registry_.registry())),
      exec_plugin_calls_(
          prometheus::BuildCounter()
              .Name("rest_client_exec_plugin_call_total")
              .Help(absl::StrCat(kAlpha,
                                 "Number of calls to an exec plugin, partitioned by the type of "
                                 "event encountered (no_error, plugin_execution_error, "
                                 "plugin_not_found_error, client_internal_error) and an optional "
                                 "exit code. The exit code will be set to 0 if and only if the "
                                 "plugin call was successful."))
              .Register(registry_.registry())) {
  prometheus::Family<prometheus::Counter>& aligned =
      prometheus::BuildCounter()
          .Name("kubelet_container_aligned_compute_resources_count")
          .Help(absl::StrCat(kAlpha,
                             "Cumulative number of aligned compute resources allocated to "
                             "containers by alignment type."))
          .Register(registry_.registry());
  prometheus::Family<prometheus::Counter>& failures =
      prometheus::BuildCounter()
          .Name("kubelet_container_aligned_compute_resources_failure_count")
          .Help(absl::StrCat(kAlpha,
                             "Cumulative number of failures to allocate aligned compute "
                             "resources to containers by alignment type."))
          .Register(registry_.registry());
  // Both scopes from 0, as upstream's topology manager starts them.
  for (const auto scope :
       {topologymanager::TopologyScope::kContainer, topologymanager::TopologyScope::kPod}) {
    const bool pod = scope == topologymanager::TopologyScope::kPod;
    alignments_[pod][true] = &aligned.Add(AlignmentLabels(scope));
    alignments_[pod][false] = &failures.Add(AlignmentLabels(scope));
  }
  // Every reason from 0, so that rate() sees the first refusal of each.
  for (const absl::string_view reason : devicemanager::kAdmissionRefusalReasons) {
    admissions_refused_.Add({{"reason", std::string(reason)}});
  }
  for (const absl::string_view reason : kDaemonRefusalReasons) {
    admissions_refused_.Add({{"reason", std::string(reason)}});
  }
  registry_.Add(std::make_shared<ProcessCollector>());
  AddBuildInfo(registry_.registry());
}

void NodeMetrics::AttachManager(const devicemanager::Manager& manager) {
  registry_.Add(std::make_shared<CallbackFamily>(
      "devmgr_device_plugin_endpoint_state",
      "State of the endpoint of each device plugin resource: 1 for its state (running; stopped, "
      "within its grace period; expired, about to be removed), 0 for the others.",
      MetricType::Gauge, std::vector<std::string>{"resource_name", "state"}, [&manager] {
        std::vector<CollectedSample> samples;
        for (const devicemanager::ResourceSummary& summary : manager.GetResourceSummaries()) {
          for (const auto state :
               {devicemanager::EndpointState::kRunning, devicemanager::EndpointState::kStopped,
                devicemanager::EndpointState::kExpired}) {
            samples.push_back({{summary.resource_name, std::string(StateName(state))},
                               summary.state == state ? 1.0 : 0.0});
          }
        }
        return samples;
      }));
  registry_.Add(std::make_shared<CallbackFamily>(
      "devmgr_device_plugin_devices", "Devices of each device plugin resource, by health.",
      MetricType::Gauge, std::vector<std::string>{"resource_name", "health"}, [&manager] {
        std::vector<CollectedSample> samples;
        for (const devicemanager::ResourceSummary& summary : manager.GetResourceSummaries()) {
          samples.push_back(
              {{summary.resource_name, "healthy"}, static_cast<double>(summary.healthy_devices)});
          samples.push_back({{summary.resource_name, "unhealthy"},
                             static_cast<double>(summary.unhealthy_devices)});
        }
        return samples;
      }));
}

void NodeMetrics::AttachDraManager(const dra::Manager& manager) {
  registry_.Add(std::make_shared<CallbackFamily>(
      "dra_resource_claims_in_use",
      absl::StrCat(kAlpha,
                   "The number of ResourceClaims that are currently in use on the node, by driver "
                   "name (driver_name label value) and across all drivers (special value <any> "
                   "for driver_name). Note that the sum of all by-driver counts is not the total "
                   "number of in-use ResourceClaims because the same ResourceClaim might use "
                   "devices from different drivers. Instead, use the count for the <any> "
                   "driver_name."),
      MetricType::Gauge, std::vector<std::string>{"driver_name"}, [&manager] {
        std::vector<CollectedSample> samples;
        for (const auto& [driver, count] : manager.ClaimsInUse()) {
          samples.push_back({{driver}, static_cast<double>(count)});
        }
        return samples;
      }));
}

void NodeMetrics::AttachPluginWatcher(const pluginwatcher::Watcher& watcher) {
  registry_.Add(std::make_shared<CallbackFamily>(
      "plugin_manager_total_plugins", absl::StrCat(kAlpha, "Number of plugins in Plugin Manager"),
      MetricType::Gauge, std::vector<std::string>{"socket_path", "state"}, [&watcher] {
        // One plugin per socket path in each state, as upstream counts them.
        std::vector<CollectedSample> samples;
        for (const pluginwatcher::RegisteredPlugin& plugin : watcher.GetRegisteredPlugins()) {
          samples.push_back({{plugin.socket_path, "actual_state_of_world"}, 1});
        }
        for (const pluginwatcher::DesiredPlugin& plugin : watcher.GetPluginsToRegister()) {
          samples.push_back({{plugin.socket_path, "desired_state_of_world"}, 1});
        }
        return samples;
      }));
}

void NodeMetrics::OperationDone(absl::string_view operation, bool failed, absl::Duration duration) {
  dra_operations_duration_
      .Add({{"operation_name", std::string(operation)}, {"is_error", failed ? "true" : "false"}},
           DraDurationBuckets())
      .Observe(absl::ToDoubleSeconds(duration));
}

void NodeMetrics::DriverCallDone(absl::string_view driver, absl::string_view method,
                                 absl::StatusCode code, absl::Duration duration) {
  dra_grpc_duration_
      .Add({{"driver_name", std::string(driver)},
            {"method_name", std::string(method)},
            {"grpc_status_code", GoCodeName(code)}},
           DraDurationBuckets())
      .Observe(absl::ToDoubleSeconds(duration));
}

void NodeMetrics::TryDone(absl::string_view verb, absl::string_view host, absl::string_view code,
                          bool retry) {
  rest_requests_
      .Add(
          {{"code", std::string(code)}, {"method", std::string(verb)}, {"host", std::string(host)}})
      .Increment();
  if (retry) {
    rest_retries_
        .Add(
            {{"code", std::string(code)}, {"verb", std::string(verb)}, {"host", std::string(host)}})
        .Increment();
  }
}

void NodeMetrics::RequestDone(absl::string_view verb, absl::string_view host,
                              absl::Duration duration) {
  rest_duration_
      .Add({{"verb", std::string(verb)}, {"host", std::string(host)}}, RestClientBuckets())
      .Observe(absl::ToDoubleSeconds(duration));
}

void NodeMetrics::RequestSent(absl::string_view verb, absl::string_view host, size_t bytes) {
  rest_request_size_
      .Add({{"verb", std::string(verb)}, {"host", std::string(host)}}, RestClientSizeBuckets())
      .Observe(static_cast<double>(bytes));
}

void NodeMetrics::ResponseRead(absl::string_view verb, absl::string_view host, size_t bytes) {
  rest_response_size_
      .Add({{"verb", std::string(verb)}, {"host", std::string(host)}}, RestClientSizeBuckets())
      .Observe(static_cast<double>(bytes));
}

void NodeMetrics::Throttled(absl::string_view verb, absl::string_view host, absl::Duration wait) {
  rest_rate_limiter_duration_
      .Add({{"verb", std::string(verb)}, {"host", std::string(host)}}, RestClientBuckets())
      .Observe(absl::ToDoubleSeconds(wait));
}

void NodeMetrics::ExecPluginCalled(int exit_code, absl::string_view call_status) {
  exec_plugin_calls_
      .Add({{"code", absl::StrCat(exit_code)}, {"call_status", std::string(call_status)}})
      .Increment();
}

void NodeMetrics::AttachPodResources(const podresources::Counters& counters) {
  for (const PodResourcesCounter& counter : kPodResourcesCounters) {
    registry_.Add(std::make_shared<CallbackFamily>(
        std::string(counter.name), absl::StrCat(kAlpha, counter.help), MetricType::Counter,
        std::vector<std::string>{"server_api_version"}, [&counters, counter] {
          std::vector<CollectedSample> samples = {{{"v1"}, Read(counters.v1.*counter.value)}};
          if (counter.in_v1alpha1) {
            samples.push_back({{"v1alpha1"}, Read(counters.v1alpha1.*counter.value)});
          }
          return samples;
        }));
  }
  auto single = [this](absl::string_view name, absl::string_view help,
                       const std::atomic<uint64_t>& value) {
    registry_.Add(
        std::make_shared<CallbackFamily>(std::string(name), std::string(help), MetricType::Counter,
                                         std::vector<std::string>(), [&value] {
                                           return std::vector<CollectedSample>{{{}, Read(value)}};
                                         }));
  };
  single("devmgr_pod_resources_rate_limited_total",
         "PodResources requests and Watch streams refused by the rate limit.",
         counters.rate_limited);
  single("devmgr_pod_resources_watch_streams_opened_total", "PodResources Watch streams opened.",
         counters.watch_streams_opened);
  single("devmgr_pod_resources_watch_streams_ended_slow_total",
         "PodResources Watch streams ended because the client read too slowly.",
         counters.watch_streams_ended_slow);
}

void NodeMetrics::AttachHeapTrimmer(HeapTrimmer& trimmer) {
  registry_.Add(std::make_shared<CallbackFamily>(
      "devmgr_heap_trims_total",
      "Times freed heap memory was handed back to the kernel after work.", MetricType::Counter,
      std::vector<std::string>(), [&trimmer] {
        return std::vector<CollectedSample>{{{}, static_cast<double>(trimmer.trims())}};
      }));
  registry_.Add(std::make_shared<CallbackFamily>(
      "devmgr_heap_trim_seconds_total", "Time spent handing freed heap memory back to the kernel.",
      MetricType::Counter, std::vector<std::string>(), [&trimmer] {
        return std::vector<CollectedSample>{{{}, absl::ToDoubleSeconds(trimmer.trim_time())}};
      }));
  heap_trimmer_.store(&trimmer);
}

void NodeMetrics::PluginRegistered(absl::string_view resource_name) {
  registrations_.Add({{"resource_name", std::string(resource_name)}}).Increment();
}

void NodeMetrics::AllocationDone(absl::string_view resource_name, absl::Duration duration) {
  allocation_duration_.Add({{"resource_name", std::string(resource_name)}}, DefBuckets())
      .Observe(absl::ToDoubleSeconds(duration));
}

void NodeMetrics::AdmissionRefused(absl::string_view reason) {
  admissions_refused_.Add({{"reason", std::string(reason)}}).Increment();
}

void NodeMetrics::CheckpointWritten(absl::Duration duration, bool ok) {
  checkpoint_write_duration_.Observe(absl::ToDoubleSeconds(duration));
  if (!ok) checkpoint_write_errors_.Increment();
  if (HeapTrimmer* trimmer = heap_trimmer_.load(); trimmer != nullptr) trimmer->Touch();
}

void NodeMetrics::ResourceUpdateDropped() { health_updates_dropped_.Increment(); }

void NodeMetrics::AdmissionDone(bool failed, absl::Duration duration) {
  topology_requests_.Increment();
  if (failed) topology_errors_.Increment();
  // Whole milliseconds, as upstream's Milliseconds().
  topology_duration_.Observe(static_cast<double>(absl::ToInt64Milliseconds(duration)));
}

void NodeMetrics::AlignmentDone(topologymanager::TopologyScope scope, bool aligned) {
  alignments_[scope == topologymanager::TopologyScope::kPod][aligned]->Increment();
}

void NodeMetrics::HealthUpdateTaken(int affected_containers) {
  health_affected_containers_.Increment(affected_containers);
}

}  // namespace devmgr::node
