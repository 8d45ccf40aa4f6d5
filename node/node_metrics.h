// NodeMetrics: the metric set of `devmgr serve`, on prometheus-cpp (common/metrics_registry.h),
// rendered for `--metrics-address` (common/metrics_http_server.h). Upstream's kubelet metrics
// keep their names, labels,
// buckets and help texts (pkg/kubelet/metrics/metrics.go, with the "[ALPHA] " prefix that
// component-base adds), so dashboards made for a kubelet work unchanged:
//   kubelet_device_plugin_registration_total{resource_name}          counter
//   kubelet_device_plugin_alloc_duration_seconds{resource_name}      histogram (DefBuckets)
//   kubelet_pod_resources_endpoint_{requests,errors}_*{server_api_version}  counters
//   kubelet_topology_manager_admission_{requests,errors}_total        counters
//   kubelet_topology_manager_admission_duration_ms                    histogram (0.05-819.2 ms)
//   kubelet_container_aligned_compute_resources_{count,failure_count}{scope,boundary}  counters,
//       scope "container" and "pod", boundary "numa_node", from 0
// The kubelet's DRA metrics (names without a subsystem, as upstream):
//   dra_operations_duration_seconds{operation_name,is_error}            histogram (0.1-40 s)
//   dra_grpc_operations_duration_seconds{driver_name,method_name,grpc_status_code}  same
//   dra_resource_claims_in_use{driver_name}                             gauge, "<any>" for all
// The kubelet's plugin manager's (no subsystem either):
//   plugin_manager_total_plugins{socket_path,state}                     gauge, state
//       "desired_state_of_world" (a socket in plugins_registry) or "actual_state_of_world"
//       (registered)
// client-go's, of the API client (with --kubeconfig), as component-base's restclient package
// exports them from a kubelet:
//   rest_client_requests_total{code,method,host}                       counter
//   rest_client_request_retries_total{code,verb,host}                  counter
//   rest_client_request_duration_seconds{verb,host}                    histogram (5 ms-60 s)
//   rest_client_rate_limiter_duration_seconds{verb,host}               same
//   rest_client_request_size_bytes{verb,host}                          histogram (64 B-16 MiB)
//   rest_client_response_size_bytes{verb,host}                         same
//   rest_client_exec_plugin_call_total{code,call_status}               counter
// Ours carry the devmgr_ prefix:
//   devmgr_device_plugin_endpoint_state{resource_name,state}  1 for the endpoint's state
//       ("running", "stopped" in its grace period, "expired"), 0 for the others
//   devmgr_device_plugin_devices{resource_name,health}        "healthy" / "unhealthy"
//   devmgr_admissions_refused_total{reason}                   every reason of
//       devicemanager/metrics.h and of admission_refusals.h, from 0
//   devmgr_checkpoint_write_duration_seconds, devmgr_checkpoint_write_errors_total
//   devmgr_device_health_affected_containers_total, devmgr_device_health_updates_dropped_total
//   devmgr_pod_resources_rate_limited_total, devmgr_pod_resources_watch_streams_opened_total,
//   devmgr_pod_resources_watch_streams_ended_slow_total
//   devmgr_heap_trims_total, devmgr_heap_trim_seconds_total
//   devmgr_build_info{version,compiler,platform}              1
// And client_golang's process_* metrics (cpu, fds, memory, start time), as a kubelet has them.
//
// Order of use: create it, pass it as ManagerOptions::metrics, create the Manager and the
// PodResources server, attach them, then start the HTTP server. Everything attached must
// outlive every Render: stop the HTTP server before destroying them. Thread-safe.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>

#include <atomic>
#include <string>

#include "common/metrics_registry.h"
#include "devicemanager/manager.h"
#include "devicemanager/metrics.h"
#include "dra/manager.h"
#include "dra/metrics.h"
#include "kubeclient/metrics.h"
#include "node/heap_trimmer.h"
#include "pluginwatcher/watcher.h"
#include "podresources/metrics.h"
#include "topologymanager/metrics.h"

namespace devmgr::node {

class NodeMetrics final : public devicemanager::ManagerMetrics,
                          public dra::ManagerMetrics,
                          public topologymanager::TopologyMetrics,
                          public kubeclient::ClientMetrics {
 public:
  NodeMetrics();

  // AttachManager exports endpoints by state and devices by health, read from `manager` at
  // each Render. Call once.
  void AttachManager(const devicemanager::Manager& manager);
  // AttachDraManager exports the claims in use, read from `manager` at each Render. Call once.
  void AttachDraManager(const dra::Manager& manager);
  // AttachPluginWatcher exports the plugins of `watcher`'s desired and actual states, read at
  // each Render. Call once.
  void AttachPluginWatcher(const pluginwatcher::Watcher& watcher);
  // AttachPodResources exports the PodResources server's counters (its counters()), read at
  // each Render. Call once.
  void AttachPodResources(const podresources::Counters& counters);
  // AttachHeapTrimmer exports the trims of `trimmer` and tells it of every checkpoint write:
  // the manager writes one for each change of its state (an admission, a pod removed, a
  // plugin's new snapshot), which is the work that leaves freed memory behind. Call once.
  void AttachHeapTrimmer(HeapTrimmer& trimmer);

  // Render: every metric in the Prometheus text format 0.0.4.
  std::string Render() const { return registry_.Render(); }

  // devicemanager::ManagerMetrics; never block.
  void PluginRegistered(absl::string_view resource_name) override;
  void AllocationDone(absl::string_view resource_name, absl::Duration duration) override;
  void AdmissionRefused(absl::string_view reason) override;
  void CheckpointWritten(absl::Duration duration, bool ok) override;
  void ResourceUpdateDropped() override;

  // dra::ManagerMetrics; never block.
  void OperationDone(absl::string_view operation, bool failed, absl::Duration duration) override;
  void DriverCallDone(absl::string_view driver, absl::string_view method, absl::StatusCode code,
                      absl::Duration duration) override;

  // topologymanager::TopologyMetrics; never block.
  void AdmissionDone(bool failed, absl::Duration duration) override;
  void AlignmentDone(topologymanager::TopologyScope scope, bool aligned) override;

  // kubeclient::ClientMetrics; never block.
  void TryDone(absl::string_view verb, absl::string_view host, absl::string_view code,
               bool retry) override;
  void RequestDone(absl::string_view verb, absl::string_view host,
                   absl::Duration duration) override;
  void RequestSent(absl::string_view verb, absl::string_view host, size_t bytes) override;
  void ResponseRead(absl::string_view verb, absl::string_view host, size_t bytes) override;
  void Throttled(absl::string_view verb, absl::string_view host, absl::Duration wait) override;
  void ExecPluginCalled(int exit_code, absl::string_view call_status) override;

  // HealthUpdateTaken: the node took one device health update from the manager, whose pods
  // have `affected_containers` containers holding devices.
  void HealthUpdateTaken(int affected_containers);

 private:
  MetricsRegistry registry_;
  // Declared after registry_, which owns them.
  prometheus::Family<prometheus::Counter>& registrations_;
  prometheus::Family<prometheus::Histogram>& allocation_duration_;
  prometheus::Family<prometheus::Counter>& admissions_refused_;
  prometheus::Histogram& checkpoint_write_duration_;
  prometheus::Counter& checkpoint_write_errors_;
  prometheus::Counter& health_affected_containers_;
  prometheus::Counter& health_updates_dropped_;
  prometheus::Family<prometheus::Histogram>& dra_operations_duration_;
  prometheus::Family<prometheus::Histogram>& dra_grpc_duration_;
  prometheus::Counter& topology_requests_;
  prometheus::Counter& topology_errors_;
  prometheus::Histogram& topology_duration_;
  prometheus::Family<prometheus::Counter>& rest_requests_;
  prometheus::Family<prometheus::Counter>& rest_retries_;
  prometheus::Family<prometheus::Histogram>& rest_duration_;
  prometheus::Family<prometheus::Histogram>& rest_rate_limiter_duration_;
  prometheus::Family<prometheus::Histogram>& rest_request_size_;
  prometheus::Family<prometheus::Histogram>& rest_response_size_;
  prometheus::Family<prometheus::Counter>& exec_plugin_calls_;
  // The aligned counters' four series, [pod scope][aligned], made at construction so that an
  // admission only increments.
  prometheus::Counter* alignments_[2][2] = {};
  std::atomic<HeapTrimmer*> heap_trimmer_{nullptr};
};

}  // namespace devmgr::node
