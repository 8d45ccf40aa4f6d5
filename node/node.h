// Node: the node side of devmgr assembled, what `devmgr serve` runs and what a C++ agent embeds
// when it wants the whole node rather than the device manager alone (for that, see
// devicemanager/manager.h). Under one root folder, in a real node's layout, it owns and starts:
//   - the device manager (devicemanager::Manager): registration on device-plugins/kubelet.sock,
//     one endpoint per plugin, and device-plugins/kubelet_internal_checkpoint, byte-compatible
//     with a kubelet's;
//   - the plugin watcher on plugins_registry/, with handlers for device plugins and DRA drivers;
//   - the DRA manager (dra::Manager): pods may use ResourceClaims, which come with them (the
//     claim store, <root>/devmgr_pod_claims) or, for a node in a cluster, from its API server,
//     and which the drivers prepare before admission ends; <root>/dra_manager_state is
//     byte-compatible with a kubelet's. A background pass prepares again after a restart, and
//     unprepares the claims of pods that are gone;
//   - the topology manager's policy (topologymanager/policy.h), when one is configured;
//   - the pod registry: the node is its own pod source, with a durable record of admitted pods
//     (device-plugins/devmgr_admitted_pods) beside the checkpoint, so a restart keeps every pod's
//     devices;
//   - pod admission (admission()), all or nothing per pod;
//   - device health in pod status (KEP-4680): the pods whose devices changed health are
//     published again on the PodResources Watch stream;
//   - the PodResources service on pod-resources/kubelet.sock (v1, v1alpha1 and our Watch), with
//     each container's dynamic_resources;
//   - the admin API on devmgr.sock (mode 0600), which `devmgr pods` and other languages use;
//   - Prometheus metrics, when an address is given;
//   - a heap trimmer that hands freed heap memory back to the kernel after work.
// One node per root: <root>/devmgr.lock is held (flock) while it runs.
//
// Threads: the device manager's loop and connect threads, the watcher's threads, gRPC's
// threads for the three servers, the DRA pass's thread, the metrics server's thread and the
// heap trimmer's thread; all are started by Start and joined by Stop. The host keeps none of its
// own for the node, but calls UpdateNodeStatus periodically (as a kubelet's node status loop
// would).
//
// Thread-safety: Start and Stop are called from one thread; admission() and manager() are
// thread-safe and may be used from any thread between them (admissions block on plugins and on
// disk, see pod_admission.h).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "devicemanager/manager.h"
#include "devicemanager/types.h"
#include "dra/manager.h"
#include "kubeclient/client.h"
#include "kubeclient/rest_config.h"
#include "node/pod_admission.h"
#include "podresources/rate_limiter.h"
#include "structured/feature_gates.h"
#include "topologymanager/policy.h"

namespace devmgr::node {

struct NodeOptions {
  std::filesystem::path root_dir = "/var/lib/kubelet";
  // How long a vanished plugin's resource keeps its capacity (upstream: 5 minutes).
  absl::Duration endpoint_grace = devicemanager::kEndpointStopGracePeriod;
  // Largest message accepted from a plugin (PodResources responses are not limited).
  int max_message_bytes = devicemanager::kDefaultMaxMessageBytes;
  // Deadline of each call to a plugin (upstream has none).
  absl::Duration plugin_call_timeout = devicemanager::kDefaultPluginCallTimeout;
  // How long admission waits for a known resource's plugin to come back (upstream: 0).
  absl::Duration admission_wait = absl::Seconds(30);
  // How long after the last commit the state journal is compacted (StateJournal): the state
  // files made durable by themselves. Zero: only when the journal is full and at Stop.
  absl::Duration state_journal_compaction = absl::Seconds(1);
  podresources::RateLimitOptions podresources_rate_limit;
  // The kubelet's PodResources gates (beta, on by default since Kubernetes 1.34):
  // KubeletPodResourcesGet (off: Get answers "PodResources API Get method disabled") and
  // KubeletPodResourcesDynamicResources (off: no container lists its DRA devices).
  bool podresources_get = true;
  bool podresources_dynamic_resources = true;
  topologymanager::TopologyPolicyKind topology_policy = topologymanager::TopologyPolicyKind::kNone;
  // Whether the policy aligns each container by itself or the whole pod (the kubelet's
  // --topology-manager-scope, container by default).
  topologymanager::TopologyScope topology_scope = topologymanager::TopologyScope::kContainer;
  // The machine's NUMA nodes (topologymanager/numa_nodes.h reads them from sysfs), which the
  // device manager generates hints over as the kubelet does; empty: the nodes each resource's
  // devices report. With a policy other than none, more than max_allowable_numa_nodes fail
  // Start, as the kubelet refuses to start.
  std::vector<int> numa_nodes;
  // The policy option max-allowable-numa-nodes: at least 8, upstream's default.
  size_t max_allowable_numa_nodes = devicemanager::kMaxNumaNodesForHints;
  // The distances between numa_nodes, given for the policy option prefer-closest-numa-nodes:
  // of two affinities of as many nodes the policy picks the closer (TopologyPolicy).
  std::optional<topologymanager::NumaDistances> numa_distances;
  // Feature gate ResourceHealthStatus (KEP-4680): when the health of devices some pods hold
  // changes, the node refreshes those pods on the PodResources Watch stream at once (else at
  // the next resync) and counts them in devmgr_device_health_affected_containers_total. On by
  // default, beyond upstream's alpha gate; `devmgr pods list` shows health either way.
  bool resource_health_status = true;
  // Dynamic Resource Allocation: DRA drivers register through plugins_registry/ and pods may
  // use ResourceClaims. Off: such pods are refused and DRA drivers are not accepted.
  bool dra = true;
  // Feature gate DRAExtendedResource (KEP-5004): container resources the pod's
  // status.extendedResourceClaimStatus gives to DRA are not allocated by the device manager.
  // Off by default, as upstream's alpha gate.
  bool dra_extended_resource = false;
  // Deadline of each call to a DRA driver (upstream: 45 s).
  absl::Duration dra_call_timeout = dra::kDefaultCallTimeout;
  // The node's name: spec.nodeName of the ResourceSlices its DRA drivers publish (into the
  // local store served on devmgr.sock, or into the cluster), which the node wipes at start and
  // when a driver stays away for `dra_wiping_delay` (upstream: 30 s).
  std::string node_name = "node";
  // The cluster the node belongs to, as a kubelet does: the DRA manager reads each ResourceClaim
  // from its API server (claim documents that come with a pod are recorded with it but not
  // used), and the node's ResourceSlices there are wiped with the local store's. None: claims
  // come with their pods.
  std::optional<kubeclient::RestConfig> cluster;
  // How the client talks to it (its throttling: the kubelet's --kube-api-qps and burst; its
  // logger, when none is given, the node's).
  kubeclient::ClientOptions cluster_client;
  absl::Duration dra_wiping_delay = dra::kDefaultWipingDelay;
  // Without a cluster, the claims that come with a pod unallocated are allocated on the node
  // (claim_allocator.h) from the local slices and the DeviceClasses in `device_classes` (a file
  // or folder, read at each allocation; Start refuses one it cannot read, and one given with a
  // cluster), with the DRA features of `dra_features`;
  // `node_labels` are the labels node selectors in slices see.
  std::filesystem::path device_classes;
  std::map<std::string, std::string> node_labels;
  structured::Features dra_features;
  // How often the DRA pass runs (it also runs when a driver registers): claims still waiting
  // for their driver are prepared, those of pods that are gone unprepared (upstream's reconcile
  // runs every 60 s; its pod workers retry sooner).
  absl::Duration dra_sync_period = absl::Seconds(5);
  // Where Prometheus metrics, /healthz and /readyz are served (common/metrics_http_server.h);
  // empty for nowhere.
  std::string metrics_address;
  LoggerPtr logger;
};

// The daemon's sockets and files, derived from the root folder (made absolute, without "."
// or ".." parts or a trailing '/').
struct NodePaths {
  explicit NodePaths(const std::filesystem::path& root);
  std::filesystem::path root;
  std::filesystem::path plugin_dir;           // device-plugins/
  std::filesystem::path registry_dir;         // plugins_registry/
  std::filesystem::path podresources_socket;  // pod-resources/kubelet.sock
  std::filesystem::path admin_socket;         // devmgr.sock
  std::filesystem::path lock_file;            // devmgr.lock
  std::filesystem::path state_journal;        // devmgr_state_journal
};

class Node {
 public:
  // Start takes the lock, reads the pod record and the checkpoint, and starts every service.
  // InvalidArgument, before the root is touched, for options that cannot be served (no node
  // name, a metrics address ParseListenAddress refuses, more NUMA nodes than the policy
  // takes). FailedPrecondition, for which IsRootHeld (root_held.h) is true, when another daemon
  // holds the root; the failing service's error otherwise (then everything started is stopped
  // again).
  static absl::StatusOr<std::unique_ptr<Node>> Start(const NodeOptions& options);
  // Stops if still running.
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Stop ends the admin and PodResources services (open streams end), the watcher and the
  // device manager (the checkpoint is written), and removes the daemon's sockets. Idempotent.
  void Stop();

  // UpdateNodeStatus does what a kubelet's node status loop does with devices: reads capacity
  // and allocatable (which ends resources whose grace period has passed) and logs changes.
  // The serve command calls it periodically.
  void UpdateNodeStatus();

  // The node's pod admission (admit, remove, run options), as the admin API uses it. Valid until
  // the Node is destroyed; calls after Stop are refused (PodAdmission::Stop).
  PodAdmission& admission();
  devicemanager::Manager& manager();
  // The DRA manager; null when NodeOptions::dra is off.
  dra::Manager* dra_manager();
  const NodePaths& paths() const;
  // The metrics address actually bound (the port filled in), or empty.
  std::string metrics_address() const;

 private:
  struct State;
  explicit Node(std::unique_ptr<State> state);
  static absl::Status StartDra(State& s);
  std::unique_ptr<State> state_;
};

}  // namespace devmgr::node
