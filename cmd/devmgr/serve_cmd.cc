#include "cmd/devmgr/serve_cmd.h"

#include <pthread.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cmd/devmgr/cluster.h"
#include "cmd/devmgr/command_tree.h"
#include "cmd/devmgr/log_flags.h"
#include "cmd/devmgr/log_sink.h"
#include "cmd/devmgr/service_notifier.h"
#include "common/feature_gate_list.h"
#include "common/k8s_names.h"
#include "node/node.h"
#include "node/process_settings.h"
#include "node/root_held.h"
#include "topologymanager/numa_nodes.h"
#include "topologymanager/policy_options.h"

namespace devmgr::cli {
namespace {

struct ServeFlags {
  std::string root_dir = "/var/lib/kubelet";
  std::string endpoint_grace = "5m";
  int max_message_bytes = devicemanager::kDefaultMaxMessageBytes;
  double podresources_qps = podresources::kDefaultQps;
  int podresources_burst = podresources::kDefaultBurstTokens;
  bool podresources_shared_limit = false;
  std::string plugin_call_timeout = "30s";
  std::string admission_wait = "30s";
  std::string topology_policy = "none";
  std::string topology_scope = "container";
  std::vector<std::string> topology_policy_options;
  std::string numa_nodes = "devices";
  std::string node_status_interval = "10s";
  std::string state_journal_compaction = "1s";
  bool dra = true;
  bool dra_extended_resource = false;
  std::string dra_call_timeout = "45s";
  std::string dra_sync_period = "5s";
  std::string dra_wiping_delay = "30s";
  std::string node_name = "node";
  std::vector<std::string> node_labels;
  std::string device_classes;
  std::string feature_gates;
  ClusterFlags cluster;
  std::string metrics_address;
  LogFlags log;
  std::string log_file;
};

// klog's header: severity letter, date, time with microseconds, thread ID.

sigset_t BlockServeSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, signal);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// ReadTopologyFlags: the topology manager's flags into `options` (its policy, scope, the NUMA
// nodes hints are generated over, and the policy options, which the kubelet checks only for a
// policy other than none); InvalidArgument naming the flag at fault.
absl::Status ReadTopologyFlags(const ServeFlags& flags, node::NodeOptions& options) {
  auto fail = [](absl::string_view flag, const absl::Status& status) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", status.message()));
  };
  absl::StatusOr<topologymanager::TopologyPolicyKind> policy =
      topologymanager::ParseTopologyPolicy(flags.topology_policy);
  if (!policy.ok()) return fail("--topology-policy", policy.status());
  absl::StatusOr<topologymanager::TopologyScope> scope =
      topologymanager::ParseTopologyScope(flags.topology_scope);
  if (!scope.ok()) return fail("--topology-scope", scope.status());
  options.topology_policy = *policy;
  options.topology_scope = *scope;
  if (flags.numa_nodes != "devices") {
    absl::StatusOr<std::vector<int>> nodes =
        flags.numa_nodes == "machine" ? topologymanager::ReadNumaNodeList()
                                      : topologymanager::ParseNumaNodeList(flags.numa_nodes);
    if (!nodes.ok()) return fail("--numa-nodes", nodes.status());
    options.numa_nodes = *std::move(nodes);
  }
  constexpr absl::string_view kOptionsFlag = "--topology-policy-options";
  absl::StatusOr<std::map<std::string, std::string>> pairs =
      topologymanager::ParseOptionPairs(flags.topology_policy_options);
  if (!pairs.ok()) return fail(kOptionsFlag, pairs.status());
  if (*policy == topologymanager::TopologyPolicyKind::kNone) return absl::OkStatus();
  absl::StatusOr<topologymanager::TopologyPolicyOptions> policy_options =
      topologymanager::NewTopologyPolicyOptions(*pairs);
  if (!policy_options.ok()) return fail(kOptionsFlag, policy_options.status());
  options.max_allowable_numa_nodes = policy_options->max_allowable_numa_nodes;
  if (policy_options->prefer_closest_numa_nodes) {
    // The distances between the nodes hints name: the machine's online nodes when hints go
    // over the nodes the devices report.
    std::vector<int> nodes = options.numa_nodes;
    if (nodes.empty()) {
      absl::StatusOr<std::vector<int>> online = topologymanager::ReadNumaNodeList();
      if (!online.ok()) return fail(kOptionsFlag, online.status());
      nodes = *std::move(online);
    }
    absl::StatusOr<topologymanager::NumaDistances> distances =
        topologymanager::ReadNumaDistances(nodes);
    if (!distances.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kOptionsFlag, ": NUMA distances: ", distances.status().message()));
    }
    options.numa_distances = *std::move(distances);
  }
  return absl::OkStatus();
}

int RunServe(const ServeFlags& flags) {
  node::LimitMallocArenas();
  node::IgnoreLockOrderCycles();
  node::RaiseOpenFileLimit();
  node::NodeOptions options;
  options.root_dir = flags.root_dir;
  absl::StatusOr<absl::Duration> grace =
      ParseFlagDuration("--endpoint-grace", flags.endpoint_grace);
  absl::StatusOr<absl::Duration> call =
      ParseFlagDuration("--plugin-call-timeout", flags.plugin_call_timeout);
  absl::StatusOr<absl::Duration> wait = ParseFlagDuration("--admission-wait", flags.admission_wait);
  absl::StatusOr<absl::Duration> interval =
      ParseFlagDuration("--node-status-interval", flags.node_status_interval);
  absl::StatusOr<absl::Duration> compaction =
      ParseFlagDuration("--state-journal-compaction", flags.state_journal_compaction);
  absl::StatusOr<absl::Duration> dra_call =
      ParseFlagDuration("--dra-call-timeout", flags.dra_call_timeout);
  absl::StatusOr<absl::Duration> dra_sync =
      ParseFlagDuration("--dra-sync-period", flags.dra_sync_period);
  absl::StatusOr<absl::Duration> dra_wiping =
      ParseFlagDuration("--dra-wiping-delay", flags.dra_wiping_delay);
  for (const auto* parsed :
       {&grace, &call, &wait, &interval, &compaction, &dra_call, &dra_sync, &dra_wiping}) {
    if (!parsed->ok()) return Fail(kExitUsage, parsed->status().message());
  }
  for (const auto& [flag, value] :
       {std::pair{"--plugin-call-timeout", *call}, std::pair{"--node-status-interval", *interval},
        std::pair{"--dra-call-timeout", *dra_call}, std::pair{"--dra-sync-period", *dra_sync}}) {
    if (value == absl::ZeroDuration())
      return Fail(kExitUsage, absl::StrCat(flag, " must be positive"));
  }
  if (flags.max_message_bytes < 4 << 20) {
    return Fail(kExitUsage, "--max-message-bytes must be at least 4194304 (gRPC's default)");
  }
  // Not !(qps < 0): NaN compares false to everything, and would mean no limit.
  if (!(flags.podresources_qps >= 0) || std::isinf(flags.podresources_qps)) {
    return Fail(kExitUsage, "--podresources-qps must be a number >= 0 (0: no limit)");
  }
  if (flags.podresources_burst < 1) return Fail(kExitUsage, "--podresources-burst must be >= 1");
  // Trimmed and lower-cased, as the kubelet takes its --hostname-override; then it names the
  // node's slices and its Node object, whose name the API server checks as a DNS subdomain.
  const std::string node_name = absl::AsciiStrToLower(absl::StripAsciiWhitespace(flags.node_name));
  if (node_name.empty()) return Fail(kExitUsage, "--node-name must not be empty");
  if (const std::vector<std::string> errors = Dns1123SubdomainErrors(node_name); !errors.empty()) {
    return Fail(kExitUsage,
                absl::StrCat("--node-name: \"", node_name, "\": ", absl::StrJoin(errors, ", ")));
  }
  if (absl::Status topology = ReadTopologyFlags(flags, options); !topology.ok()) {
    return Fail(kExitUsage, topology.message());
  }
  std::shared_ptr<ReopenableFileSink> file_sink;
  spdlog::sink_ptr sink;
  if (flags.log_file.empty()) {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  } else {
    absl::StatusOr<std::shared_ptr<ReopenableFileSink>> opened =
        ReopenableFileSink::Open(flags.log_file);
    if (!opened.ok()) return Fail(kExitUsage, opened.status().message());
    file_sink = *opened;
    sink = file_sink;
  }
  absl::StatusOr<LoggerPtr> made = NewLogger(flags.log, "devmgr", sink);
  if (!made.ok()) return Fail(kExitUsage, made.status().message());
  const LoggerPtr logger = *std::move(made);

  options.endpoint_grace = *grace;
  options.max_message_bytes = flags.max_message_bytes;
  options.plugin_call_timeout = *call;
  options.admission_wait = *wait;
  options.state_journal_compaction = *compaction;
  options.dra = flags.dra;
  options.dra_extended_resource = flags.dra_extended_resource;
  options.dra_call_timeout = *dra_call;
  options.dra_sync_period = *dra_sync;
  options.dra_wiping_delay = *dra_wiping;
  options.node_name = node_name;
  absl::StatusOr<std::map<std::string, std::string>> labels = ParseNodeLabels(flags.node_labels);
  if (!labels.ok()) return Fail(kExitUsage, labels.status().message());
  options.node_labels = *std::move(labels);
  options.device_classes = flags.device_classes;
  // The kubelet's own gates that serve plays; the rest are the allocator's.
  absl::StatusOr<std::vector<std::pair<std::string, bool>>> gates =
      ParseFeatureGateList(flags.feature_gates);
  if (!gates.ok())
    return Fail(kExitUsage, absl::StrCat("--feature-gates: ", gates.status().message()));
  std::vector<std::string> dra_gates;
  for (const auto& [name, enabled] : *gates) {
    if (name == "KubeletPodResourcesGet") {
      options.podresources_get = enabled;
    } else if (name == "KubeletPodResourcesDynamicResources") {
      options.podresources_dynamic_resources = enabled;
    } else if (name != "KubeletPodResourcesListUseActivePods") {
      // (That one, deprecated, chooses between the active pods and every pod for List: the
      // daemon holds active pods only, so either lists the same.)
      dra_gates.push_back(absl::StrCat(name, "=", enabled ? "true" : "false"));
    }
  }
  absl::StatusOr<structured::Features> features =
      structured::ParseFeatureGates(absl::StrJoin(dra_gates, ","));
  if (!features.ok()) {
    return Fail(kExitUsage,
                absl::StrCat("--feature-gates: ", features.status().message(),
                             "; the kubelet's: KubeletPodResourcesDynamicResources, "
                             "KubeletPodResourcesGet, KubeletPodResourcesListUseActivePods"));
  }
  options.dra_features = *features;
  absl::StatusOr<std::optional<kubeclient::RestConfig>> cluster = ChooseCluster(flags.cluster);
  if (!cluster.ok()) return Fail(kExitUsage, cluster.status().message());
  options.cluster = *std::move(cluster);
  absl::StatusOr<kubeclient::ClientOptions> cluster_client = ClusterClientOptions(flags.cluster);
  if (!cluster_client.ok()) return Fail(kExitUsage, cluster_client.status().message());
  options.cluster_client = *std::move(cluster_client);
  options.podresources_rate_limit.qps = flags.podresources_qps;
  options.podresources_rate_limit.burst = flags.podresources_burst;
  options.podresources_rate_limit.per_client = !flags.podresources_shared_limit;
  options.metrics_address = flags.metrics_address;
  options.logger = logger;

  // Blocked before any thread starts, so that every thread inherits the mask and only the
  // sigtimedwait below sees these signals.
  const sigset_t signals = BlockServeSignals();
  const ServiceNotifier notifier;
  absl::StatusOr<std::unique_ptr<node::Node>> daemon = node::Node::Start(options);
  if (!daemon.ok()) {
    return Fail(node::IsRootHeld(daemon.status()) ? kExitNo : kExitUsage,
                daemon.status().message());
  }
  notifier.Ready(absl::StrCat("Serving under ", flags.root_dir));

  // The node status every --node-status-interval and, under systemd's watchdog, a sign of life
  // at half its interval.
  const absl::Duration watchdog = notifier.WatchdogInterval().value_or(absl::InfiniteDuration());
  absl::Time next_status = absl::Now();
  absl::Time next_watchdog = absl::Now();
  for (;;) {
    const absl::Time now = absl::Now();
    if (now >= next_status) {
      (*daemon)->UpdateNodeStatus();
      next_status = now + *interval;
    }
    if (now >= next_watchdog) {
      notifier.Watchdog();
      next_watchdog = now + watchdog;
    }
    const timespec tick = absl::ToTimespec(
        std::max(absl::ZeroDuration(), std::min(next_status, next_watchdog) - absl::Now()));
    const int signal = sigtimedwait(&signals, nullptr, &tick);
    if (signal < 0) continue;  // the interval passed (or EINTR)
    if (signal == SIGHUP) {
      if (file_sink != nullptr) {
        if (absl::Status reopened = file_sink->Reopen(); !reopened.ok()) {
          DEVMGR_LOG(logger, err, "Failed to reopen the log file", "err", reopened);
        }
      }
      DEVMGR_LOG(logger, info, "Log file reopened on SIGHUP");
      continue;
    }
    DEVMGR_LOG(logger, info, "Stopping on signal", "signal", signal);
    break;
  }
  notifier.Stopping();
  (*daemon)->Stop();
  logger->flush();
  return kExitOk;
}

}  // namespace

void AddServeCommand(CLI::App& app, CommandResult& result) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* serve = app.add_subcommand(
      "serve",
      "Run the node side: device plugin registration, the checkpoint, the plugin watcher, "
      "PodResources and the admin API, under --root-dir in a real node's layout");
  serve
      ->add_option("--root-dir", flags->root_dir,
                   "Kubelet root folder: device-plugins/, plugins_registry/, pod-resources/ and "
                   "devmgr.sock (the admin API) are under it")
      ->type_name("DIR")
      ->capture_default_str();
  serve
      ->add_option("--endpoint-grace", flags->endpoint_grace,
                   "How long a resource whose plugin went away keeps its capacity (upstream: 5m)")
      ->type_name("DURATION")
      ->capture_default_str();
  serve
      ->add_option("--max-message-bytes", flags->max_message_bytes,
                   "Largest message accepted from a plugin: ListAndWatch, "
                   "GetPreferredAllocation (upstream: 4 MiB); an Allocate answer is taken up to "
                   "4 MiB whatever this says, as a kubelet takes it")
      ->type_name("BYTES")
      ->capture_default_str()
      ->transform(DecimalInteger<int>());
  serve
      ->add_option("--podresources-qps", flags->podresources_qps,
                   "PodResources requests per second allowed per client (0: no limit)")
      ->capture_default_str();
  serve
      ->add_option("--podresources-burst", flags->podresources_burst,
                   "PodResources requests a client may make at once after an idle period")
      ->capture_default_str()
      ->transform(DecimalInteger<int>());
  serve->add_flag("--podresources-shared-limit", flags->podresources_shared_limit,
                  "One PodResources rate limit shared by all clients, as upstream (default: one "
                  "per client)");
  serve
      ->add_option("--plugin-call-timeout", flags->plugin_call_timeout,
                   "Deadline of each Allocate, GetPreferredAllocation and "
                   "GetDevicePluginOptions call to a plugin (upstream: none)")
      ->type_name("DURATION")
      ->capture_default_str();
  serve
      ->add_option("--admission-wait", flags->admission_wait,
                   "How long admission waits for a known resource's plugin to come back "
                   "(upstream: 0s, fail at once)")
      ->type_name("DURATION")
      ->capture_default_str();
  serve
      ->add_option("--topology-policy", flags->topology_policy,
                   "Topology manager policy for admission: none, best-effort, restricted or "
                   "single-numa-node")
      ->type_name("POLICY")
      ->capture_default_str();
  serve
      ->add_option("--topology-scope", flags->topology_scope,
                   "What the topology policy aligns: container (each by itself) or pod (all "
                   "of a pod's containers on the same NUMA nodes)")
      ->type_name("SCOPE")
      ->capture_default_str();
  serve
      ->add_option("--topology-policy-options", flags->topology_policy_options,
                   "Topology manager policy options, NAME=VALUE separated by commas: "
                   "prefer-closest-numa-nodes=true (of affinities of as many NUMA nodes, the "
                   "closest, by the distances sysfs gives), max-allowable-numa-nodes=N (at "
                   "least 8)")
      ->type_name("OPTIONS")
      ->take_all();
  serve
      ->add_option("--numa-nodes", flags->numa_nodes,
                   "The NUMA nodes topology hints are generated over: machine (the online "
                   "nodes sysfs lists, as the kubelet), a list such as 0-3,5, or devices (the "
                   "nodes each resource's devices report)")
      ->type_name("NODES")
      ->capture_default_str();
  serve
      ->add_option("--node-status-interval", flags->node_status_interval,
                   "How often capacity is read, ending resources past their grace period")
      ->type_name("DURATION")
      ->capture_default_str();
  serve
      ->add_option("--state-journal-compaction", flags->state_journal_compaction,
                   "How long after the last write of the node's state its files are made durable "
                   "by themselves and the state journal emptied (0s: only when the journal is "
                   "full and when devmgr stops)")
      ->type_name("DURATION")
      ->capture_default_str();
  serve
      ->add_option("--dra", flags->dra,
                   "Dynamic Resource Allocation: accept DRA drivers and pods with ResourceClaims")
      ->type_name("BOOL")
      ->default_str(flags->dra ? "true" : "false");
  serve
      ->add_option("--dra-extended-resource", flags->dra_extended_resource,
                   "Feature gate DRAExtendedResource: leave to DRA the container resources a "
                   "pod's status.extendedResourceClaimStatus maps to it, and prepare the claim "
                   "it names")
      ->type_name("BOOL")
      ->default_str(flags->dra_extended_resource ? "true" : "false");
  serve
      ->add_option("--dra-call-timeout", flags->dra_call_timeout,
                   "Deadline of each call to a DRA driver (upstream: 45s)")
      ->type_name("DURATION")
      ->capture_default_str();
  serve
      ->add_option("--dra-sync-period", flags->dra_sync_period,
                   "How often claims waiting for their driver are prepared and those of pods "
                   "that are gone unprepared")
      ->type_name("DURATION")
      ->capture_default_str();
  serve
      ->add_option("--dra-wiping-delay", flags->dra_wiping_delay,
                   "How long a DRA driver with no connected endpoint keeps its ResourceSlices "
                   "(upstream: 30s)")
      ->type_name("DURATION")
      ->capture_default_str();
  serve
      ->add_option("--node-name", flags->node_name,
                   "The node's name, trimmed and lower-cased as the kubelet's: spec.nodeName of "
                   "the ResourceSlices DRA drivers publish (fake-dra --node-name), which the "
                   "node wipes")
      ->type_name("NAME")
      ->capture_default_str();
  serve
      ->add_option("--node-label", flags->node_labels,
                   "A label of the node, for ResourceSlices with node selectors; once per label")
      ->type_name("KEY=VALUE");
  serve
      ->add_option("--device-classes", flags->device_classes,
                   "DeviceClasses (a YAML/JSON file or folder, checked at start and read at each "
                   "allocation): without a cluster, claims that come with a pod unallocated are "
                   "allocated on the node")
      ->type_name("PATH");
  serve
      ->add_option("--feature-gates", flags->feature_gates,
                   "Feature gates, NAME=true|false,...: the DRA allocator's "
                   "(DRAPartitionableDevices, DRADeviceTaints, DRAConsumableCapacity, ...) and "
                   "PodResources' (KubeletPodResourcesGet, KubeletPodResourcesDynamicResources)")
      ->type_name("GATES");
  AddClusterFlags(*serve, flags->cluster,
                  "the node is in it, as a kubelet with --kubeconfig: DRA claims are read from "
                  "its API server and the node's ResourceSlices there are wiped");
  serve
      ->add_option("--metrics-address", flags->metrics_address,
                   "Serve Prometheus metrics at /metrics, and /healthz and /readyz, on "
                   "unix:/path, /path, host:port or :port (loopback); off when empty")
      ->type_name("ADDRESS");
  AddLogFlags(*serve, flags->log);
  serve
      ->add_option("--log-file", flags->log_file,
                   "Append logs to this file instead of stderr (SIGHUP reopens it)")
      ->type_name("FILE");
  SetExamples(*serve, {{"Run the node side in a folder of your own, without root",
                        "devmgr serve --root-dir /tmp/node"},
                       {"In a kubelet's place, waiting at most 10s for a plugin at admission",
                        "devmgr serve --admission-wait 10s --metrics-address :10255"}});
  serve->callback([&result, flags] { result.exit_code = RunServe(*flags); });
}

}  // namespace devmgr::cli
