#include "node/node.h"

#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <map>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/connection_acceptor.h"
#include "common/durable_folder.h"
#include "common/errno_status.h"
#include "common/metrics_http_server.h"
#include "common/placed_socket.h"
#include "common/server_threads.h"
#include "common/state_journal.h"
#include "common/unix_socket.h"
#include "node/admin_service.h"
#include "node/claim_allocator.h"
#include "node/claim_store.h"
#include "node/claim_sync_loop.h"
#include "node/cluster_claim_source.h"
#include "node/device_plugin_handler.h"
#include "node/dra_plugin_handler.h"
#include "node/dra_resources_provider.h"
#include "node/heap_trimmer.h"
#include "node/lock_file.h"
#include "node/manager_devices_provider.h"
#include "node/manifest_fields.h"
#include "node/node_metrics.h"
#include "node/pod_admission.h"
#include "node/pod_manifest.h"
#include "node/pod_registry.h"
#include "node/recording_checkpoint_store.h"
#include "node/root_held.h"
#include "node/store_slice_wiper.h"
#include "pluginwatcher/watcher.h"
#include "podresources/server.h"
#include "resourceslice/api_store.h"
#include "resourceslice/memory_store.h"
#include "resourceslice/store_service.h"

namespace devmgr::node {

namespace {

// The root as one spelling: absolute ("kubelet" run from /var/lib is /var/lib/kubelet, as the
// sockets must be), without "." or ".." parts or a trailing '/'. The state journal names the
// folders of its files, so a restart must spell them as the run that wrote it did.
std::filesystem::path OneSpelling(const std::filesystem::path& root) {
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(root, ec);
  if (ec) return root;  // no working folder: the paths fail later, saying so
  absolute = absolute.lexically_normal();
  return absolute.has_filename() || absolute == absolute.root_path() ? absolute
                                                                     : absolute.parent_path();
}

devicemanager::NumaMask MaskOf(const std::vector<int>& nodes) {
  devicemanager::NumaMask mask;
  for (int node : nodes) mask.Add(node);
  return mask;
}

}  // namespace

NodePaths::NodePaths(const std::filesystem::path& root_dir)
    : root(OneSpelling(root_dir)),
      plugin_dir(root / "device-plugins"),
      registry_dir(root / "plugins_registry"),
      podresources_socket(root / "pod-resources" / "kubelet.sock"),
      admin_socket(root / "devmgr.sock"),
      lock_file(root / "devmgr.lock"),
      state_journal(root / "devmgr_state_journal") {}

// AdminServer: the admin API's server and the loop that accepts its connections.
struct AdminServer {
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<ConnectionAcceptor> acceptor;

  // Shutdown stops accepting (a client is refused from then on), then ends the server's calls;
  // nothing when it never started.
  void Shutdown() {
    if (acceptor != nullptr) acceptor->Stop();
    if (server != nullptr) server->Shutdown();
  }
};

// Everything the daemon runs, in start order; Stop tears it down in reverse.
struct Node::State {
  explicit State(const NodeOptions& daemon_options)
      : options(daemon_options),
        paths(daemon_options.root_dir),
        registry(paths.plugin_dir, daemon_options.logger),
        topology(daemon_options.topology_policy, MaskOf(daemon_options.numa_nodes),
                 daemon_options.topology_scope, daemon_options.numa_distances) {}
  // The registry's writes go through the DRA manager (PodAdmission::SetDra), which is destroyed
  // before it: they go to the journal alone from here (Node::Stop has stopped every writer
  // already).
  ~State() { registry.CarryWith(journal.get()); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  const NodeOptions options;
  const NodePaths paths;
  std::unique_ptr<LockFile> lock;
  // Where every write of the node's state files ends (StateJournal); it outlives their writers,
  // and its destruction compacts it.
  std::unique_ptr<StateJournal> journal;
  NodeMetrics metrics;
  // Told of each checkpoint write by `metrics`, so it outlives the manager.
  HeapTrimmer heap_trimmer{HeapTrimmer::Options{}};
  PodRegistry registry;
  // The manager's checkpoint store: writes the record along with the checkpoint.
  RecordingCheckpointStore checkpoint_store{FileStore(paths.plugin_dir), registry};
  // Set once the registry has read the record and the restored allocations.
  std::atomic<bool> pods_known{false};
  topologymanager::TopologyPolicy topology;
  devicemanager::ManagerPtr manager;
  std::unique_ptr<PodAdmission> admission;
  // DRA, when enabled: the cluster's API server (when there is one), where claims are read and
  // this node's ResourceSlices are wiped, and the local ResourceSlice store, which is wiped too.
  std::unique_ptr<kubeclient::Client> cluster;
  std::unique_ptr<resourceslice::ApiSliceStore> cluster_slices;
  std::unique_ptr<ClusterClaimSource> cluster_claims;
  std::unique_ptr<resourceslice::MemoryStore> slices;
  std::unique_ptr<resourceslice::StoreService> slice_service;
  std::unique_ptr<StoreSliceWiper> slice_wiper;
  std::unique_ptr<ClaimStore> claims;
  std::unique_ptr<ClaimAllocator> claim_allocator;
  std::unique_ptr<dra::Manager> dra;
  std::unique_ptr<DraPluginHandler> dra_handler;
  std::unique_ptr<DraResourcesProvider> dra_provider;
  std::unique_ptr<ClaimSyncLoop> claim_sync;
  std::unique_ptr<DevicePluginHandler> handler;
  pluginwatcher::WatcherPtr watcher;
  std::unique_ptr<ManagerDevicesProvider> devices_provider;
  std::unique_ptr<podresources::PodResourcesServer> podresources;
  std::unique_ptr<AdminService> admin_service;
  AdminServer admin;
  std::unique_ptr<MetricsHttpServer> metrics_server;
  // What /readyz answers: set once Start has started everything, cleared when Stop begins.
  std::atomic<bool> ready{false};
  // The manager's change callback that forwards device health updates, or -1.
  int health_subscription = -1;
  // Where the DRA manager's health changes are announced once the PodResources server exists
  // (the health streams start before it).
  std::atomic<podresources::PodResourcesNotifier*> dra_health_notifier{nullptr};
  // Last capacity and allocatable logged by UpdateNodeStatus.
  std::map<std::string, int64_t> capacity;
  std::map<std::string, int64_t> allocatable;
  bool stopped = false;
};

namespace {

// CreateDataDir makes a folder of the node's layout, if it is missing, with the kubelet's mode
// (setupDataDirs: 0750, less what the umask takes away); an existing folder keeps its mode.
absl::Status CreateDataDir(const std::filesystem::path& dir) {
  return CreateFolders(dir, 0750).status();
}

// StartAdminServer serves the admin API on a socket that only the daemon's user can open: it is
// bound under a temporary name, set to 0600 before it listens (ListenUnix: the process's umask,
// which a host embedding the node shares with its other threads, is left alone), and only then
// put at `socket`, so that the socket found there always has its mode
// (and, bound last, says that every service of the node is up).
absl::StatusOr<AdminServer> StartAdminServer(const std::filesystem::path& socket,
                                             const std::vector<grpc::Service*>& services,
                                             const LoggerPtr& logger) {
  PlacedSocket placed(socket);
  if (absl::Status valid = placed.Check(); !valid.ok()) return valid;
  absl::StatusOr<int> fd = ListenUnix(placed.bind_path(), /*owner_only=*/true);
  if (!fd.ok()) return fd.status();
  // Until the socket is placed, a failure leaves nothing at its temporary name.
  const auto fail = [&](absl::Status status) {
    ::unlink(placed.bind_path().c_str());
    return status;
  };
  ConnectionAcceptor::Options accepting;
  accepting.name = "admin API";
  accepting.logger = logger;
  absl::StatusOr<std::unique_ptr<ConnectionAcceptor>> acceptor =
      ConnectionAcceptor::Create(*fd, std::move(accepting));
  if (!acceptor.ok()) return fail(acceptor.status());
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(kMaxAdminRequestBytes);
  KeepHandlerThreads(builder);
  for (grpc::Service* service : services) builder.RegisterService(service);
  AdminServer admin{builder.BuildAndStart(), *std::move(acceptor)};
  if (admin.server == nullptr) {
    return fail(
        absl::UnavailableError(absl::StrCat("cannot serve the admin API on ", socket.string())));
  }
  admin.acceptor->Start(*admin.server);
  if (absl::Status moved = placed.Place(); !moved.ok()) {
    admin.Shutdown();
    return fail(moved);
  }
  return admin;
}

// ForwardHealthUpdates takes the manager's device health updates (run on its loop thread, after
// changes) and publishes each pod they name again on the Watch stream, which reads the new
// health; pods the registry no longer has are left to the stream's own removal.
void ForwardHealthUpdates(devicemanager::Manager& manager, const PodRegistry& registry,
                          podresources::PodResourcesNotifier& notifier, NodeMetrics& metrics) {
  for (const devicemanager::ResourceUpdate& update : manager.TakeResourceUpdates()) {
    int affected = 0;
    for (const std::string& uid : update.pod_uids) {
      const std::optional<RegisteredPod> registered = registry.Find(uid);
      if (!registered.has_value()) continue;
      for (const auto* list : {&registered->pod.init_containers, &registered->pod.containers}) {
        for (const devicemanager::Container& container : *list) {
          if (!manager.GetDevices(uid, container.name).empty()) ++affected;
        }
      }
      notifier.PodChanged(PodRegistry::ToPodResources(registered->pod));
    }
    metrics.HealthUpdateTaken(affected);
  }
}

// PodOfClaims: the pod the claim store describes, with its containers by name and no device.
// An init container is a sidecar when its restartPolicy says so (a record written before it
// was kept has none: all are plain init containers).
devicemanager::Pod PodOfClaims(const dra::Pod& stored) {
  devicemanager::Pod pod;
  pod.uid = stored.uid;
  pod.namespace_name = stored.namespace_name;
  pod.name = stored.name;
  for (const dra::Container& container : stored.init_containers) {
    devicemanager::Container& init = pod.init_containers.emplace_back();
    init.name = container.name;
    init.type = container.restart_policy == "Always" ? devicemanager::ContainerType::kSidecar
                                                     : devicemanager::ContainerType::kInit;
  }
  for (const dra::Container& container : stored.containers) {
    pod.containers.emplace_back().name = container.name;
  }
  return pod;
}

// CompleteClaimEntries gives the claim store's entries that an earlier devmgr wrote without an
// init container's restart policy, or without the resources a container requests, those of the
// pod the registry holds (not a recovered one: its containers are not all known), and writes
// the record when one changed. Both follow from the pod, so an admission of it again finds its
// entry the same, and its run options hand its containers the claims their resources map to.
void CompleteClaimEntries(ClaimStore& claims, const PodRegistry& registry,
                          const LoggerPtr& logger) {
  bool changed = false;
  for (const dra::Pod& stored : claims.Pods()) {
    const std::optional<RegisteredPod> registered = registry.Find(stored.uid);
    if (!registered.has_value() || registered->recovered) continue;
    dra::Pod completed = stored;
    for (auto* list : {&completed.init_containers, &completed.containers}) {
      for (dra::Container& container : *list) {
        const devicemanager::Container* known = registered->pod.FindContainer(container.name);
        if (known == nullptr) continue;
        if (container.restart_policy.empty() &&
            known->type == devicemanager::ContainerType::kSidecar) {
          container.restart_policy = "Always";
        }
        if (container.requested_resources.empty()) {
          container.requested_resources = RequestedResources(*known);
        }
      }
    }
    if (completed == stored) continue;
    if (absl::Status replaced = claims.Replace(completed); !replaced.ok()) {
      DEVMGR_LOG(logger, warn, "A claim record entry of an earlier devmgr is kept as it was",
                 "podUID", stored.uid, "err", replaced);
      continue;
    }
    changed = true;
  }
  if (!changed) return;
  // The entries are complete in memory; the record's next write carries them if this fails.
  if (absl::Status written = claims.Flush(); !written.ok()) {
    DEVMGR_LOG(logger, warn, "Failed to write the claim record with its entries completed", "err",
               written);
  }
}

// Device classes the node would never read, or cannot, are refused at start rather than at the
// first claim: a cluster's scheduler allocates its claims; a path with a typo, or a class that
// does not decode, would fail every allocation. A pipe is left for the allocation to read.
absl::Status CheckDeviceClasses(const NodeOptions& options) {
  if (options.device_classes.empty()) return absl::OkStatus();
  if (options.cluster.has_value()) {
    return absl::InvalidArgumentError(
        "device classes are read only by a node without a cluster, whose claims it allocates");
  }
  std::error_code error;
  const std::filesystem::file_status status =
      std::filesystem::status(options.device_classes, error);
  if (error) {
    return absl::InvalidArgumentError(
        absl::StrCat("device classes ", options.device_classes.string(), ": ", error.message()));
  }
  if (!std::filesystem::is_regular_file(status) && !std::filesystem::is_directory(status)) {
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<kubeapi::DeviceClass>> classes =
      ReadDeviceClasses(options.device_classes, options.dra_features);
  if (!classes.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("device classes: ", classes.status().message()));
  }
  return absl::OkStatus();
}

}  // namespace

// StartDra reads the claim store (forgetting the claims of pods the registry does not hold: an
// admission a crash cut short) and the DRA checkpoint, and gives admission the DRA manager.
absl::Status Node::StartDra(State& s) {
  const NodeOptions& options = s.options;
  s.claims = std::make_unique<ClaimStore>(s.paths.root, options.logger, s.journal.get());
  if (absl::Status loaded = s.claims->Load(); !loaded.ok()) return loaded;
  // Pods recovered from the checkpoint get their names here. After a corrupt pod record, the
  // claim record is also what still names the pods that hold claims and no device: they are
  // admitted again, so that neither this start nor a later one forgets their claims or has
  // their drivers unprepare them.
  std::vector<devicemanager::Pod> pods;
  for (const dra::Pod& pod : s.claims->Pods()) pods.push_back(PodOfClaims(pod));
  if (absl::Status recovered = s.registry.Recover(std::move(pods)); !recovered.ok()) {
    return recovered;
  }
  const std::vector<std::string> active = s.registry.ActiveUids();
  if (absl::Status kept = s.claims->Retain({active.begin(), active.end()}); !kept.ok()) {
    return kept;
  }
  CompleteClaimEntries(*s.claims, s.registry, options.logger);
  s.slices = std::make_unique<resourceslice::MemoryStore>();
  s.slices->SetNode(options.node_name, NewUid());
  s.slice_service = std::make_unique<resourceslice::StoreService>(*s.slices);
  std::vector<resourceslice::SliceStore*> wiped = {s.slices.get()};
  if (options.cluster.has_value()) {
    kubeclient::ClientOptions client_options = options.cluster_client;
    if (client_options.logger == nullptr) client_options.logger = options.logger;
    if (client_options.metrics == nullptr) client_options.metrics = &s.metrics;
    absl::StatusOr<std::unique_ptr<kubeclient::Client>> client =
        kubeclient::Client::Create(*options.cluster, std::move(client_options));
    if (!client.ok()) return client.status();
    s.cluster = *std::move(client);
    s.cluster_slices = std::make_unique<resourceslice::ApiSliceStore>(*s.cluster, options.logger);
    s.cluster_claims = std::make_unique<ClusterClaimSource>(*s.cluster);
    wiped.push_back(s.cluster_slices.get());
  }
  s.slice_wiper = std::make_unique<StoreSliceWiper>(std::move(wiped), options.node_name);
  dra::ManagerOptions dra_options;
  dra_options.state_dir = s.paths.root;
  dra_options.slice_wiper = s.slice_wiper.get();
  dra_options.wiping_delay = options.dra_wiping_delay;
  if (s.cluster_claims != nullptr) {
    dra_options.claims = s.cluster_claims.get();
  } else {
    dra_options.claims = s.claims.get();
    // No scheduler: claims that come unallocated are allocated here, from the local slices.
    ClaimAllocatorOptions allocator_options;
    allocator_options.node_name = options.node_name;
    allocator_options.node_labels = options.node_labels;
    allocator_options.device_classes = options.device_classes;
    allocator_options.features = options.dra_features;
    s.claim_allocator = std::make_unique<ClaimAllocator>(allocator_options, *s.slices);
    s.admission->SetClaimAllocator(s.claim_allocator.get());
  }
  dra_options.extended_resource = options.dra_extended_resource;
  dra_options.optional_node_operations = options.dra_features.optional_node_operations;
  dra_options.workload_resource_claims = options.dra_features.workload_resource_claims;
  dra_options.call_timeout = options.dra_call_timeout;
  dra_options.metrics = &s.metrics;
  dra_options.resource_health_status = options.resource_health_status;
  // The pods whose claimed devices changed health are published again on the Watch stream.
  dra_options.on_health_change = [&s](const std::vector<std::string>& pod_uids) {
    podresources::PodResourcesNotifier* notifier = s.dra_health_notifier.load();
    if (notifier == nullptr) return;
    for (const std::string& uid : pod_uids) {
      if (std::optional<RegisteredPod> registered = s.registry.Find(uid); registered.has_value()) {
        notifier->PodChanged(PodRegistry::ToPodResources(registered->pod));
      }
    }
  };
  // Its checkpoint writes carry the claim record: a pod's claims reach the disk in the flush
  // that records the pod with them, before its drivers are called.
  dra_options.writer = s.claims.get();
  dra_options.logger = options.logger;
  absl::StatusOr<std::unique_ptr<dra::Manager>> manager = dra::Manager::Create(dra_options);
  if (!manager.ok()) return manager.status();
  s.dra = *std::move(manager);
  s.metrics.AttachDraManager(*s.dra);
  s.admission->SetDra(s.dra.get(), s.claims.get());
  s.dra_provider = std::make_unique<DraResourcesProvider>(*s.dra, *s.claims);
  s.dra_handler = std::make_unique<DraPluginHandler>(s.dra->drivers(), [&s] {
    if (s.claim_sync != nullptr) s.claim_sync->Kick();
  });
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Node>> Node::Start(const NodeOptions& options) {
  // It names the node's ResourceSlices, and the wipes of a driver's: empty, they would be
  // every node's.
  if (options.node_name.empty()) return absl::InvalidArgumentError("the node's name is empty");
  if (!options.metrics_address.empty()) {
    if (absl::StatusOr<ListenAddress> metrics = ParseListenAddress(options.metrics_address);
        !metrics.ok()) {
      return metrics.status();
    }
  }
  if (options.topology_policy != topologymanager::TopologyPolicyKind::kNone &&
      options.numa_nodes.size() > options.max_allowable_numa_nodes) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported on machines with more than ",
                                                   options.max_allowable_numa_nodes,
                                                   " NUMA Nodes"));
  }
  if (absl::Status classes = CheckDeviceClasses(options); !classes.ok()) return classes;
  auto state = std::make_unique<State>(options);
  const NodePaths& paths = state->paths;
  // A root too deep for its sockets' addresses is refused before the node touches it.
  for (const std::filesystem::path& socket :
       {paths.plugin_dir / "kubelet.sock", paths.podresources_socket}) {
    if (absl::Status valid = ValidateSocketPath(socket); !valid.ok()) return valid;
  }
  if (absl::Status valid = PlacedSocket(paths.admin_socket).Check(); !valid.ok()) return valid;
  if (absl::Status created = CreateDataDir(paths.root); !created.ok()) return created;
  absl::StatusOr<std::unique_ptr<LockFile>> lock = LockFile::Acquire(paths.lock_file);
  if (!lock.ok()) return lock.status();
  state->lock = *std::move(lock);
  // Another devmgr would hold the lock; a kubelet takes none. Starting beside one would remove
  // its sockets (plugins would register here) and write its checkpoint under it, so the root
  // is refused while a process serves either of its sockets, before the node touches anything
  // there but its lock (a stopping node removes the sockets).
  for (const std::filesystem::path& socket :
       {paths.plugin_dir / "kubelet.sock", paths.podresources_socket}) {
    // A socket no one can connect to (EACCES, say) may be a kubelet's as well. Another error
    // of the look (a symlink loop on the way) is the root's own, not another process's.
    if (absl::Status nobody = NobodyServes(socket); !nobody.ok()) {
      if (!absl::IsAlreadyExists(nobody) && !absl::IsPermissionDenied(nobody)) return nobody;
      return RootHeldError(
          absl::StrCat(nobody.message(),
                       " (a kubelet on this root?): refusing to take over its sockets and "
                       "checkpoint; stop it, or give devmgr a root of its own"));
    }
  }
  // From here on the node owns the root; a failure stops what started.
  std::unique_ptr<Node> node(new Node(std::move(state)));
  State& s = *node->state_;
  for (const std::filesystem::path& dir :
       {paths.plugin_dir, paths.registry_dir, paths.podresources_socket.parent_path()}) {
    if (absl::Status created = CreateDataDir(dir); !created.ok()) return created;
  }
  // Before anything reads the state files: a crash may have left them behind the journal.
  StateJournal::Options journal_options;
  journal_options.path = paths.state_journal;
  journal_options.folders = {paths.plugin_dir, paths.root};
  journal_options.idle_compaction = options.state_journal_compaction;
  journal_options.logger = options.logger;
  absl::StatusOr<std::unique_ptr<StateJournal>> journal =
      StateJournal::Open(std::move(journal_options));
  if (!journal.ok()) return journal.status();
  s.journal = *std::move(journal);
  s.registry.CarryWith(s.journal.get());

  devicemanager::ManagerOptions manager_options;
  manager_options.plugin_dir = paths.plugin_dir;
  manager_options.endpoint_stop_grace_period = options.endpoint_grace;
  manager_options.plugin_call_timeout = options.plugin_call_timeout;
  manager_options.max_message_bytes = options.max_message_bytes;
  manager_options.admission_wait = options.admission_wait;
  manager_options.numa_nodes = options.numa_nodes;
  manager_options.max_allowable_numa_nodes = options.max_allowable_numa_nodes;
  // One flush per admission: PodAdmission syncs the checkpoint, which carries the pod record.
  manager_options.checkpoint_store = &s.checkpoint_store;
  manager_options.host_syncs_admissions = true;
  if (options.topology_policy != topologymanager::TopologyPolicyKind::kNone) {
    manager_options.topology_affinity = &s.topology;
  }
  s.metrics.AttachHeapTrimmer(s.heap_trimmer);
  manager_options.metrics = &s.metrics;
  manager_options.resource_health_status = options.resource_health_status;
  manager_options.dra_extended_resource = options.dra_extended_resource;
  manager_options.logger = options.logger;
  PodRegistry& registry = s.registry;
  manager_options.active_pods_revision = [&registry] { return registry.ActiveUidsRevision(); };
  s.manager = devicemanager::CreateManager(std::move(manager_options));
  // The daemon knows all its pods once the record is read, with the pods of the checkpoint the
  // manager restored (it reads the file once, for both): until then no device is freed.
  std::atomic<bool>& pods_known = s.pods_known;
  if (absl::Status started = s.manager->Start([&registry] { return registry.ActiveUids(); },
                                              [&pods_known] { return pods_known.load(); });
      !started.ok()) {
    return started;
  }
  const PodRegistry::CheckpointRead read = s.manager->RestoredWholeCheckpoint()
                                               ? PodRegistry::CheckpointRead::kWhole
                                               : PodRegistry::CheckpointRead::kPartial;
  if (absl::Status loaded = s.registry.Load(s.manager->Allocations(), read); !loaded.ok()) {
    return loaded;
  }
  // Pods a restart cut in flight: their devices are released before anything else may free
  // them in memory only (the release makes it durable, and only then may the record forget
  // them). A failed release leaves them for the next start.
  for (const std::string& uid : s.registry.Leaving()) {
    if (absl::Status released = s.manager->ReleasePod(uid); released.ok()) {
      s.registry.Released(uid);
    } else {
      DEVMGR_LOG(options.logger, err, "Failed to release the devices of a pod cut in flight",
                 "podUID", uid, "err", released);
    }
  }
  pods_known = true;
  s.metrics.AttachManager(*s.manager);
  s.admission = std::make_unique<PodAdmission>(*s.manager, s.registry, s.topology, options.logger);
  s.admission->SetDraExtendedResource(options.dra_extended_resource);
  s.admission->SetRefusalObserver(
      [metrics = &s.metrics](absl::string_view reason) { metrics->AdmissionRefused(reason); });
  s.admission->SetTopologyMetrics(&s.metrics);

  if (options.dra) {
    if (absl::Status started = StartDra(s); !started.ok()) return started;
    // Before the watcher, whose DRA handler kicks it. SyncClaims logs its failures, and the
    // next pass retries them.
    s.claim_sync = std::make_unique<ClaimSyncLoop>(
        options.dra_sync_period,
        [admission = s.admission.get()] { admission->SyncClaims().IgnoreError(); });
  }

  s.handler = std::make_unique<DevicePluginHandler>(*s.manager);
  s.manager->AnnouncePluginWatcher();
  pluginwatcher::WatcherOptions watcher_options =
      pluginwatcher::WatcherOptions::ForRootDir(paths.root);
  watcher_options.logger = options.logger;
  s.watcher = pluginwatcher::CreateWatcher(std::move(watcher_options));
  s.watcher->AddHandler(pluginwatcher::kDevicePlugin, *s.handler);
  if (s.dra_handler != nullptr) s.watcher->AddHandler(pluginwatcher::kDRAPlugin, *s.dra_handler);
  if (absl::Status started = s.watcher->Start(); !started.ok()) return started;
  s.metrics.AttachPluginWatcher(*s.watcher);

  s.devices_provider = std::make_unique<ManagerDevicesProvider>(*s.manager);
  podresources::ServerOptions server_options;
  server_options.socket_path = paths.podresources_socket;
  server_options.rate_limit = options.podresources_rate_limit;
  server_options.get_enabled = options.podresources_get;
  podresources::Providers providers;
  providers.pods = &s.registry;
  providers.devices = s.devices_provider.get();
  providers.dynamic_resources = s.dra_provider.get();
  providers.list_dynamic_resources = options.podresources_dynamic_resources;
  absl::StatusOr<std::unique_ptr<podresources::PodResourcesServer>> podresources =
      podresources::PodResourcesServer::Create(server_options, providers, options.logger);
  if (!podresources.ok()) return podresources.status();
  s.podresources = *std::move(podresources);
  s.admission->SetNotifier(&s.podresources->notifier());
  s.dra_health_notifier = &s.podresources->notifier();
  if (options.resource_health_status) {
    s.health_subscription = s.manager->Subscribe(
        [manager = s.manager.get(), &registry = s.registry, notifier = &s.podresources->notifier(),
         metrics = &s.metrics] { ForwardHealthUpdates(*manager, registry, *notifier, *metrics); });
  }
  s.metrics.AttachPodResources(s.podresources->counters());

  if (!options.metrics_address.empty()) {
    MetricsHttpServer::Options http_options;
    http_options.address = options.metrics_address;
    http_options.ready = [&ready = s.ready] {
      return ready.load() ? absl::OkStatus()
                          : absl::UnavailableError("the node is starting or stopping");
    };
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> http = MetricsHttpServer::Start(
        http_options, [metrics = &s.metrics] { return metrics->Render(); });
    if (!http.ok()) return http.status();
    s.metrics_server = *std::move(http);
    DEVMGR_LOG(options.logger, info, "Serving metrics", "address", s.metrics_server->address());
  }

  s.admin_service = std::make_unique<AdminService>(
      *s.admission, s.registry, *s.manager, options.dra_features, s.claims.get(), s.dra.get());
  absl::StatusOr<AdminServer> admin = StartAdminServer(
      paths.admin_socket,
      s.slice_service == nullptr
          ? std::vector<grpc::Service*>{s.admin_service.get()}
          : std::vector<grpc::Service*>{s.admin_service.get(), s.slice_service.get()},
      options.logger);
  if (!admin.ok()) return admin.status();
  s.admin = *std::move(admin);

  DEVMGR_LOG(options.logger, info, "devmgr serving", "rootDir", paths.root.string(), "pods",
             static_cast<int64_t>(s.registry.Count()));
  s.ready = true;
  return node;
}

Node::Node(std::unique_ptr<State> state) : state_(std::move(state)) {}

Node::~Node() { Stop(); }

void Node::Stop() {
  State& s = *state_;
  if (s.stopped) return;
  s.stopped = true;
  s.ready = false;
  if (s.metrics_server != nullptr) s.metrics_server->Stop();
  if (s.health_subscription >= 0) s.manager->Unsubscribe(s.health_subscription);
  // Admissions waiting for a plugin to come back are refused at once: the admin server's
  // shutdown waits for its calls. From here on the host's own calls are refused too.
  if (s.admission != nullptr) s.admission->Stop();
  if (s.manager != nullptr) s.manager->StopAdmissions();
  s.admin.Shutdown();
  // No health report reaches the PodResources notifier once its server is going.
  if (s.dra != nullptr) s.dra->drivers().StopHealthStreams();
  if (s.podresources != nullptr) s.podresources->Shutdown();
  // A plugin handler call that a hung plugin holds gives up at once, so the watcher's Stop
  // need not wait it out.
  if (s.manager != nullptr) s.manager->StopRegistrations();
  if (s.watcher != nullptr) s.watcher->Stop();
  // After the watcher, whose DRA handler kicks it; a pass that runs finishes first.
  s.claim_sync.reset();
  if (s.manager != nullptr) s.manager->Stop();
  for (const auto& socket :
       {s.paths.admin_socket, s.paths.podresources_socket, s.paths.plugin_dir / "kubelet.sock"}) {
    if (absl::Status removed = RemoveStaleSocket(socket); !removed.ok()) {
      DEVMGR_LOG(s.options.logger, warn, "Failed to remove a socket", "path", socket.string(),
                 "err", removed);
    }
  }
  DEVMGR_LOG(s.options.logger, info, "devmgr stopped", "rootDir", s.paths.root.string());
}

void Node::UpdateNodeStatus() {
  State& s = *state_;
  // Resources whose grace period ended are removed (and logged) by the device manager.
  devicemanager::CapacityResult result = s.manager->GetCapacity();
  if (result.capacity != s.capacity || result.allocatable != s.allocatable) {
    for (const auto& [resource, count] : result.capacity) {
      auto it = result.allocatable.find(resource);
      DEVMGR_LOG(s.options.logger, info, "Device capacity", "resourceName", resource, "capacity",
                 count, "allocatable", it == result.allocatable.end() ? int64_t{0} : it->second);
    }
    s.capacity = std::move(result.capacity);
    s.allocatable = std::move(result.allocatable);
  }
}

PodAdmission& Node::admission() { return *state_->admission; }

devicemanager::Manager& Node::manager() { return *state_->manager; }

dra::Manager* Node::dra_manager() { return state_->dra.get(); }

const NodePaths& Node::paths() const { return state_->paths; }

std::string Node::metrics_address() const {
  return state_->metrics_server != nullptr ? state_->metrics_server->address() : "";
}

}  // namespace devmgr::node
