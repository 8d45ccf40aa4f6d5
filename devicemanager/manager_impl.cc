#include "devicemanager/manager_impl.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/damaged_copy.h"
#include "common/durable_folder.h"
#include "common/errno_status.h"
#include "common/file_store.h"
#include "common/go_quote.h"
#include "common/k8s_names.h"
#include "common/unix_socket.h"
#include "common/utf8.h"
#include "devicemanager/checkpoint_store_impl.h"
#include "devicemanager/device_snapshot.h"
#include "devicemanager/endpoint_impl.h"
#include "devicemanager/validation.h"

namespace devmgr::devicemanager {
namespace {

// Whether a listing of plugin_dir says the node's device state was wiped: nothing in it, or no
// folder at all (upstream's checkpoint manager creates it, empty, with the manager).
bool HoldsNothing(const absl::StatusOr<std::vector<std::string>>& names) {
  return names.ok() ? names->empty() : absl::IsNotFound(names.status());
}

// LogExcerpt: `text` when it is short, else its first KiB (never half a UTF-8 character) and
// its length, for a log line made from what a peer sent.
std::string LogExcerpt(absl::string_view text) {
  constexpr size_t kMaxBytes = 1024;
  if (text.size() <= kMaxBytes) return std::string(text);
  return absl::StrCat(text.substr(0, Utf8CutPoint(text, kMaxBytes)), "... (", text.size(),
                      " bytes)");
}

// How long Stop lets Register calls in flight finish before cancelling them.
constexpr absl::Duration kServerShutdownGrace = absl::Seconds(1);

// The largest corrupt checkpoint copied aside: several times a checkpoint of 10,000 pods.
constexpr size_t kMaxCorruptCopyBytes = size_t{16} << 20;

// How often a kubelet.sock registration looks for the plugin's socket that is not there yet.
constexpr absl::Duration kSocketPollInterval = absl::Milliseconds(20);

// The key of an endpoint among its resource's live endpoints: its socket as DeRegisterPlugin
// names it, so that one socket reached through kubelet.sock (plugin_dir joined with a name) and
// through plugins_registry (a path as the plugin wrote it) is one key.
std::filesystem::path SocketKey(const Endpoint& endpoint) {
  return endpoint.socket_path().lexically_normal();
}

std::unique_ptr<EndpointFactory> DefaultEndpointFactory(const ManagerOptions& options) {
  if (options.endpoint_factory != nullptr) return nullptr;
  EndpointOptions endpoint_options;
  endpoint_options.dial_timeout = options.dial_timeout;
  endpoint_options.call_timeout = options.plugin_call_timeout;
  endpoint_options.pre_start_timeout = options.pre_start_timeout;
  endpoint_options.max_message_bytes = options.max_message_bytes;
  return std::make_unique<EndpointFactoryImpl>(endpoint_options);
}

CheckpointStorePtr DefaultCheckpointStore(const ManagerOptions& options) {
  if (options.checkpoint_store != nullptr) return nullptr;
  return std::make_unique<CheckpointStoreImpl>(FileStore(options.plugin_dir));
}

ManagerMetrics& NoMetrics() {
  static ManagerMetrics* const metrics = new ManagerMetrics();  // never destroyed: safe at exit
  return *metrics;
}

}  // namespace

ManagerImpl::ManagerImpl(ManagerOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : MonotonicClock()),
      metrics_(options_.metrics != nullptr ? *options_.metrics : NoMetrics()),
      own_endpoint_factory_(DefaultEndpointFactory(options_)),
      endpoint_factory_(own_endpoint_factory_ != nullptr ? *own_endpoint_factory_
                                                         : *options_.endpoint_factory),
      own_store_(DefaultCheckpointStore(options_)),
      store_(own_store_ != nullptr ? *own_store_ : *options_.checkpoint_store),
      connect_pool_(static_cast<size_t>(std::max(1, options_.connect_threads))) {}

ManagerImpl::~ManagerImpl() { Stop(); }

std::filesystem::path ManagerImpl::KubeletSocket() const {
  return options_.plugin_dir / std::string(kKubeletSocketName);
}

absl::Status ManagerImpl::Start(ActivePodsFn active_pods, SourcesReadyFn sources_ready) {
  absl::MutexLock start(&start_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (started_) return absl::FailedPreconditionError("device manager already started");
    if (stopping_) return absl::FailedPreconditionError("device manager stopped");
    if (registrations_ != Registrations::kOpen) {
      return absl::FailedPreconditionError("device manager registrations already stopped");
    }
    started_ = true;
    active_pods_ = std::move(active_pods);
    sources_ready_ = std::move(sources_ready);
  }
  if (!FileStore::IsValidName(options_.checkpoint_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid checkpoint name \"", options_.checkpoint_name, "\""));
  }
  if (options_.max_allowable_numa_nodes < kMaxNumaNodesForHints) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_allowable_numa_nodes is ", options_.max_allowable_numa_nodes,
        ", below upstream's minimum of max-allowable-numa-nodes, ", kMaxNumaNodesForHints));
  }
  // Hints are masks of these nodes: one a mask cannot hold, or a node given twice, would make
  // hints that repeat.
  std::set<int> numa_nodes;
  for (const int node : options_.numa_nodes) {
    if (node < 0 || node >= NumaMask::kMaxNode) {
      return absl::InvalidArgumentError(
          absl::StrCat("numa_nodes: node ", node, " is outside 0-", NumaMask::kMaxNode - 1));
    }
    if (!numa_nodes.insert(node).second) {
      return absl::InvalidArgumentError(absl::StrCat("numa_nodes: node ", node, " is given twice"));
    }
  }
  // Upstream's text for a path that is not absolute; the reason itself for one no socket address
  // holds (too long, or a ',' that gRPC would split at).
  if (!KubeletSocket().is_absolute()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad socketPath, must be an absolute path: ", KubeletSocket().string()));
  }
  if (absl::Status status = ValidateSocketPath(KubeletSocket()); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("bad socketPath: ", status.message()));
  }
  // The answer of ShouldResetExtendedResourceCapacity from now on: kubelet.sock, which is put
  // there next, is no sign of the node's past.
  const bool wiped = HoldsNothing(store_.List());
  {
    absl::MutexLock lock(&mu_);
    wiped_at_start_ = wiped;
  }
  absl::StatusOr<bool> created = CreateFolders(options_.plugin_dir, 0750);
  if (!created.ok()) return created.status();
  // As upstream's MkdirAll(dir, 0750): a new folder gets 0750 (whatever the umask), an
  // existing one keeps its mode.
  if (*created && ::chmod(options_.plugin_dir.c_str(), 0750) != 0) {
    return ErrnoStatus(errno, "cannot chmod", options_.plugin_dir);
  }

  if (own_store_ != nullptr) {
    // What a crash inside a checkpoint write left; a host's store is the host's to clean.
    absl::StatusOr<size_t> removed = FileStore(options_.plugin_dir).RemoveTemporaries();
    if (!removed.ok()) {
      DEVMGR_LOG(options_.logger, info, "Failed to remove temporary files", "dir",
                 options_.plugin_dir.string(), "err", removed.status());
    }
  }
  RestoreFromCheckpoint();
  {
    absl::MutexLock lock(&mu_);
    checkpoint_read_ = true;
  }
  // Plugins notice that kubelet.sock was re-created and register again.
  if (absl::Status status = RemoveSocketsIn(options_.plugin_dir); !status.ok()) {
    DEVMGR_LOG(options_.logger, info, "Failed to clean up stale sockets", "dir",
               options_.plugin_dir.string(), "err", status);
  }
  server_ = std::make_unique<RegistrationServer>(static_cast<RegistrationCallbacks&>(*this));
  {
    // Before the server: a plugin may register as soon as it serves.
    absl::MutexLock lock(&mu_);
    serving_ = true;
  }
  if (absl::Status status = server_->Start(KubeletSocket()); !status.ok()) {
    absl::MutexLock lock(&mu_);
    serving_ = false;
    return status;
  }
  DEVMGR_LOG(options_.logger, info, "Serving device plugin registration server on socket", "path",
             KubeletSocket().string());
  return absl::OkStatus();
}

void ManagerImpl::StopRegistrations() {
  {
    absl::MutexLock lock(&mu_);
    if (registrations_ != Registrations::kOpen) {
      // Another caller is at it: return once it is done, as if this call had done it.
      mu_.Await(absl::Condition(
          +[](Registrations* state) { return *state == Registrations::kStopped; },
          &registrations_));
      return;
    }
    registrations_ = Registrations::kStopping;
  }
  connect_cancelled_ = true;
  // kubelet.sock's Register calls in flight are answered by connect threads, and the watcher's
  // RegisterPlugin calls by its workers; both give up quickly now. A Start in progress ends
  // first, its server then shut down here.
  {
    absl::MutexLock start(&start_mu_);
    if (server_ != nullptr) server_->Shutdown(kServerShutdownGrace);
  }
  connect_pool_.Join();
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int* calls) { return *calls == 0; }, &registrations_in_flight_));
  registrations_ = Registrations::kStopped;
}

void ManagerImpl::StopAdmissions() {
  absl::MutexLock lock(&mu_);
  admissions_stopped_ = true;
}

void ManagerImpl::Stop() {
  stop_once_.Run([this] { StopNow(); });
}

void ManagerImpl::StopNow() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    admissions_stopped_ = true;
    if (!started_) return;
  }
  StopRegistrations();

  // Every client goes through the disconnected path, as upstream's server.Stop does. Its
  // devices become unhealthy, but the checkpoint writes from now on keep them as the plugins
  // last reported them (upstream never writes at Stop, so its file has them too).
  std::vector<EndpointSharedPtr> live;
  {
    absl::MutexLock lock(&mu_);
    registered_at_stop_ = RegisteredSnapshotLocked();
    for (auto& [resource, sockets] : live_endpoints_) {
      MarkResourceUnhealthyLocked(resource);
      for (auto& [socket, endpoint] : sockets) {
        endpoint.endpoint->MarkStopped(clock_.Now());
        live.push_back(endpoint.endpoint);
      }
    }
    live_endpoints_.clear();
  }
  // Replaced endpoints were cancelled when they were replaced; these are the rest.
  for (auto& endpoint : live) endpoint->CancelStream();
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int* streams) { return *streams == 0; }, &active_streams_));
  }
  loop_.Stop();
  // A write still pending on the loop is covered by this one, which takes the state as it is
  // now: a write made meanwhile (a ReleasePod) is never followed by an older one.
  WriteCheckpoint(/*last=*/true);
  DEVMGR_LOG(options_.logger, info, "Device manager stopped");
}

void ManagerImpl::RestoreFromCheckpoint() {
  // Whether it lost nothing, told under the lock once known.
  const auto lost_entries = [this] {
    absl::MutexLock lock(&mu_);
    restored_whole_ = false;
  };
  absl::StatusOr<std::string> bytes = store_.Read(options_.checkpoint_name);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) {
      // A first start: nothing was lost. The kubelet says so in these words as an error; here it
      // is an info line, as the wire contract calls it no error (a fresh node, and every
      // `devmgr bench` daemon, would otherwise start with an E line).
      DEVMGR_LOG(options_.logger, info, "Failed to read data from checkpoint", "err",
                 "checkpoint is not found", "checkpoint", options_.checkpoint_name);
      return;
    }
    DEVMGR_LOG(options_.logger, err,
               "Continue after failing to read checkpoint file. Device allocation info may NOT "
               "be up-to-date",
               "err", bytes.status());
    lost_entries();
    return;
  }
  absl::StatusOr<checkpoint::CheckpointData> data = checkpoint::Decode(*bytes);
  if (!data.ok()) {
    // A copy for a human, which the next write does not replace. The bad file itself stays
    // until that write: a start after a crash before it finds the file again, and knows again
    // that entries were lost, where a file set aside would leave no checkpoint at all, which
    // reads as one that lost nothing.
    // A file far larger than any checkpoint is not copied (a journaled store, as the daemon's,
    // would carry it whole and keep room for it).
    const absl::StatusOr<std::string> kept =
        bytes->size() <= kMaxCorruptCopyBytes
            ? KeepDamagedCopy(store_, options_.checkpoint_name, *bytes)
            : absl::FailedPreconditionError(
                  absl::StrCat(bytes->size(), " bytes, more than ", kMaxCorruptCopyBytes));
    DEVMGR_LOG(options_.logger, err,
               "Continue after failing to read checkpoint file. Device allocation info may NOT "
               "be up-to-date",
               "err", data.status(), "copiedTo", kept.ok() ? *kept : "", "copyErr", kept.status());
    lost_entries();
    return;
  }
  std::vector<std::string> skipped;
  PodDevices restored = PodDevices::FromCheckpoint(std::move(data->pod_device_entries), &skipped);
  for (const auto& key : skipped) {
    DEVMGR_LOG(options_.logger, err, "Can't unmarshal allocResp, skipping checkpoint entry",
               "entry", key);
  }
  absl::MutexLock lock(&mu_);
  pod_devices_ = std::move(restored);
  restored_whole_ = skipped.empty();
  const absl::Time now = clock_.Now();
  // Only the names matter: each gets empty device sets and a stopped endpoint, so capacity
  // and allocatable are 0 until its plugin registers again within the grace period.
  for (const auto& [resource, ids] : data->registered_devices) {
    devices_[resource] = std::make_shared<const DeviceTable>();
    DevicesChangedLocked(resource);
    endpoints_[resource] = Endpoint::NewStopped(resource, now);
  }
}

ManagerImpl::CheckpointSnapshot ManagerImpl::CheckpointSnapshotLocked() const {
  CheckpointSnapshot data;
  data.store_mark = store_.Snapshotting();
  // Restored allocations are written back as they are: never drop what a kubelet allocated.
  data.entries = pod_devices_.RenderedEntries();
  data.registered =
      registered_at_stop_.has_value() ? *registered_at_stop_ : RegisteredSnapshotLocked();
  return data;
}

ManagerImpl::RegisteredSnapshot ManagerImpl::RegisteredSnapshotLocked() const {
  RegisteredSnapshot registered;
  registered.rendered.reserve(devices_.size());
  for (const auto& [resource, table] : devices_) {
    if (auto rendered = registered_rendered_.find(resource);
        rendered != registered_rendered_.end()) {
      registered.rendered.push_back(rendered->second);
    } else {
      registered.unrendered.emplace_back(resource, table);
    }
  }
  return registered;
}

std::vector<std::shared_ptr<const checkpoint::EncodedRegistered>> ManagerImpl::RenderRegistered(
    const RegisteredSnapshot& snapshot) {
  std::vector<std::shared_ptr<const checkpoint::EncodedRegistered>> registered = snapshot.rendered;
  if (snapshot.unrendered.empty()) return registered;
  std::vector<std::shared_ptr<const checkpoint::EncodedRegistered>> made;
  made.reserve(snapshot.unrendered.size());
  for (const auto& [resource, table] : snapshot.unrendered) {
    made.push_back(std::make_shared<const checkpoint::EncodedRegistered>(
        checkpoint::EncodeRegistered(resource, table->HealthyIds())));
    registered.push_back(made.back());
  }
  // Kept for the next writes unless the devices changed meanwhile (the pointer held here
  // cannot have been reused for newer devices).
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < made.size(); ++i) {
    const auto& [resource, table] = snapshot.unrendered[i];
    auto current = devices_.find(resource);
    if (current != devices_.end() && current->second == table) {
      registered_rendered_[resource] = made[i];
    }
  }
  return registered;
}

void ManagerImpl::DevicesChangedLocked(absl::string_view resource_name) {
  if (auto it = registered_rendered_.find(resource_name); it != registered_rendered_.end()) {
    registered_rendered_.erase(it);
  }
  if (devices_.find(resource_name) != devices_.end()) {
    table_revisions_.insert_or_assign(std::string(resource_name), ++table_changes_);
  } else if (auto it = table_revisions_.find(resource_name); it != table_revisions_.end()) {
    table_revisions_.erase(it);
  }
}

void ManagerImpl::WriteCheckpoint(bool last) {
  // The snapshot is taken under write_mu_, so it is never older than one already written.
  absl::MutexLock write_lock(&write_mu_);
  CheckpointSnapshot data;
  uint64_t snapshot = 0;
  {
    absl::MutexLock lock(&mu_);
    checkpoint_write_pending_ = false;
    if (last) {
      // From here on ReleasePod and SyncCheckpoint change nothing: a release made before is in
      // this snapshot (or written already), one after is refused. Nothing to write when nothing
      // changed since Start read the file.
      stopped_ = true;
      if (!checkpoint_read_ || !(checkpoint_changed_ || commit_generation_ > 0)) return;
    }
    data = CheckpointSnapshotLocked();
    snapshot = commit_generation_;
  }
  if (absl::Status status = StoreCheckpoint(data); !status.ok()) {
    DEVMGR_LOG(options_.logger, err, "Writing checkpoint encountered", "err", status);
    return;
  }
  absl::MutexLock lock(&mu_);
  durable_generation_ = std::max(durable_generation_, snapshot);
}

absl::Status ManagerImpl::StoreCheckpoint(const CheckpointSnapshot& data) {
  const std::string bytes =
      checkpoint::EncodeRendered(data.entries, RenderRegistered(data.registered));
  // A monotonic clock: options_.clock may be a test's, and wall time can jump.
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = store_.WriteSnapshot(options_.checkpoint_name, bytes, data.store_mark);
  metrics_.CheckpointWritten(absl::FromChrono(std::chrono::steady_clock::now() - start),
                             status.ok());
  return status;
}

void ManagerImpl::ScheduleCheckpointLocked() {
  checkpoint_changed_ = true;
  if (checkpoint_write_pending_ || stopping_) return;  // Stop writes at the end anyway
  checkpoint_write_pending_ = true;
  loop_.PostAfter(options_.checkpoint_write_delay, [this] { WriteCheckpoint(); });
}

void ManagerImpl::ScheduleNotifyLocked() {
  if (notify_pending_ || stopping_) return;
  notify_pending_ = true;
  loop_.Post([this] { RunListeners(); });
}

void ManagerImpl::RunListeners() {
  {
    absl::MutexLock lock(&mu_);
    notify_pending_ = false;
  }
  absl::MutexLock lock(&listeners_mu_);
  for (auto& [id, callback] : listeners_) callback();
}

int ManagerImpl::Subscribe(ChangeCallback callback) {
  absl::MutexLock lock(&listeners_mu_);
  const int id = next_listener_id_++;
  listeners_[id] = std::move(callback);
  return id;
}

void ManagerImpl::Unsubscribe(int id) {
  absl::MutexLock lock(&listeners_mu_);
  listeners_.erase(id);
}

void ManagerImpl::OnRegister(const v1beta1::RegisterRequest& request, DoneFn done) {
  // Upstream logs and counts every request under the name it gives. Here the log keeps the
  // start of a long one, and only a valid resource name (a few hundred bytes at most) is
  // counted: any other may be megabytes long, and each distinct one would stay a metric series
  // for as long as the process runs. The refusal answers the whole text.
  DEVMGR_LOG(options_.logger, info, "Got registration request from device plugin with resource",
             "resourceName", LogExcerpt(request.resource_name()));
  if (absl::Status status = CheckRegisterRequest(request.version(), request.resource_name());
      !status.ok()) {
    if (IsExtendedResourceName(request.resource_name())) {
      metrics_.PluginRegistered(request.resource_name());
    }
    DEVMGR_LOG(options_.logger, err, "Bad registration request from device plugin", "err",
               LogExcerpt(status.message()));
    done(status);
    return;
  }
  metrics_.PluginRegistered(request.resource_name());
  // The dial blocks, so it leaves the gRPC thread; the request is copied because the RPC's
  // own copy is only guaranteed until `done`. One dial timeout covers the wait for the socket
  // and the dial, as upstream's blocking dial in its Register handler, from when a connect
  // thread takes the request up: upstream's handler has a goroutine of its own, so a request
  // that waited behind hung plugins for a free thread has not spent its dial.
  connect_pool_.Post([this, resource = request.resource_name(), endpoint = request.endpoint(),
                      done = std::move(done)] {
    const absl::Time dial_deadline = absl::Now() + options_.dial_timeout;
    absl::StatusOr<std::filesystem::path> socket = AwaitPluginSocket(endpoint, dial_deadline);
    absl::Status status =
        socket.ok() ? ConnectPlugin(resource, *socket, dial_deadline) : socket.status();
    if (!status.ok()) {
      // The endpoint is the plugin's text, of any length, and the error quotes it again.
      DEVMGR_LOG(options_.logger, err, "Failed to register device plugin", "resourceName", resource,
                 "endpoint", LogExcerpt(endpoint), "err", LogExcerpt(status.ToString()));
    }
    done(status);
  });
}

absl::StatusOr<std::filesystem::path> ManagerImpl::AwaitPluginSocket(const std::string& endpoint,
                                                                     absl::Time deadline) {
  // Nothing there yet (a plugin that registers a moment before it listens): waited for as
  // upstream's blocking dial waits, but looked at without following links, so that the dial
  // never follows one planted in the meantime; the dial starts once a socket is there.
  absl::StatusOr<std::filesystem::path> socket = ResolvePluginSocket(options_.plugin_dir, endpoint);
  while (socket.ok() && !IsSocket(*socket)) {
    if (connect_cancelled_.load()) {
      return absl::CancelledError("failed to dial device plugin: the device manager is stopping");
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("failed to dial device plugin: no socket at ",
                                                      GoQuote(socket->string()), " within ",
                                                      absl::FormatDuration(options_.dial_timeout)));
    }
    absl::SleepFor(kSocketPollInterval);
    socket = ResolvePluginSocket(options_.plugin_dir, endpoint);
  }
  return socket;
}

absl::Status ManagerImpl::ConnectPlugin(const std::string& resource_name,
                                        const std::filesystem::path& socket,
                                        absl::Time dial_deadline) {
  absl::StatusOr<EndpointSharedPtr> connected = endpoint_factory_.Connect(
      resource_name, socket, *this,
      ConnectLimits{.dial_deadline = dial_deadline, .cancelled = &connect_cancelled_});
  if (!connected.ok()) return connected.status();
  EndpointSharedPtr endpoint = *std::move(connected);

  EndpointSharedPtr replaced;
  bool supplied = false;
  int beside = 0;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("the device manager is stopping");
    std::map<std::filesystem::path, LiveEndpoint>& sockets = live_endpoints_[resource_name];
    if (auto it = sockets.find(SocketKey(*endpoint)); it != sockets.end()) {
      // On the same socket the newest registration wins, as upstream's classic handler: a
      // plugin that restarted on its socket before its old stream's end was seen, or a new
      // instance that took the socket over while the old one still serves its connection, is
      // served by the new connection. Upstream's newest handler ignores such a registration
      // instead, and then loses the plugin when the old stream ends. The old stream is stopped
      // here, so its end cannot disconnect the new plugin.
      replaced = it->second.endpoint;
      replaced->MarkStopped(clock_.Now());
      // The plugin on that socket still supplies the devices it reported, until it reports anew.
      supplied = it->second.supplies_devices;
      sockets.erase(it);
    }
    beside = static_cast<int>(sockets.size());
    sockets.emplace(SocketKey(*endpoint), LiveEndpoint{.endpoint = endpoint,
                                                       .last_devices = nullptr,
                                                       .connected = ++connections_,
                                                       .supplies_devices = supplied});
    ServeLocked(resource_name);
    ++active_streams_;
  }
  // Dropping `endpoint` on refusal above closed its channel (upstream issue #124716).
  if (replaced != nullptr) replaced->CancelStream();
  endpoint->StartListAndWatch();
  DEVMGR_LOG(options_.logger, info, "Device plugin connected", "resourceName", resource_name,
             "endpoint", socket.string(), "replaced", replaced != nullptr, "otherEndpoints",
             beside);
  return absl::OkStatus();
}

ManagerImpl::LiveEndpoint* ManagerImpl::LiveEndpointLocked(const Endpoint& endpoint) {
  auto resource = live_endpoints_.find(endpoint.resource_name());
  if (resource == live_endpoints_.end()) return nullptr;
  auto it = resource->second.find(SocketKey(endpoint));
  return it == resource->second.end() || it->second.endpoint.get() != &endpoint ? nullptr
                                                                                : &it->second;
}

void ManagerImpl::OnDevicesUpdated(const Endpoint& endpoint, std::vector<Device>&& devices) {
  // Built before taking the lock: a snapshot can hold 100,000 devices.
  auto table = std::make_shared<const DeviceTable>(std::move(devices));
  absl::MutexLock lock(&mu_);
  // A replaced or stopped endpoint's late snapshot must not overwrite the current state.
  LiveEndpoint* live = LiveEndpointLocked(endpoint);
  if (live == nullptr) return;
  live->last_devices = std::move(table);
  auto it = endpoints_.find(endpoint.resource_name());
  if (it != endpoints_.end() && it->second.get() == &endpoint) {
    ApplyDevicesLocked(endpoint.resource_name(), *live);
  } else {
    // A newer plugin than the one serving takes over with its first snapshot.
    ServeLocked(endpoint.resource_name());
  }
}

ManagerImpl::LiveEndpoint* ManagerImpl::ServingCandidateLocked(const std::string& resource_name) {
  auto sockets = live_endpoints_.find(resource_name);
  if (sockets == live_endpoints_.end()) return nullptr;
  LiveEndpoint* newest = nullptr;
  LiveEndpoint* newest_reported = nullptr;
  for (auto& [socket, live] : sockets->second) {
    if (newest == nullptr || live.connected > newest->connected) newest = &live;
    if (live.last_devices != nullptr &&
        (newest_reported == nullptr || live.connected > newest_reported->connected)) {
      newest_reported = &live;
    }
  }
  return newest_reported != nullptr ? newest_reported : newest;
}

void ManagerImpl::ServeLocked(const std::string& resource_name) {
  LiveEndpoint* candidate = ServingCandidateLocked(resource_name);
  if (candidate == nullptr) return;
  EndpointSharedPtr& serving = endpoints_[resource_name];
  if (serving == candidate->endpoint) return;
  serving = candidate->endpoint;
  if (candidate->last_devices != nullptr) {
    ApplyDevicesLocked(resource_name, *candidate);
  } else {
    // Known again once it sends its devices.
    ForgetHealthLocked(resource_name);
  }
}

void ManagerImpl::ApplyDevicesLocked(const std::string& resource_name, LiveEndpoint& source) {
  for (auto& [socket, live] : live_endpoints_[resource_name]) {
    live.supplies_devices = &live == &source;
  }
  SharedTable& current = devices_[resource_name];
  const bool first = health_known_.insert(resource_name).second;
  if (options_.resource_health_status) {
    QueueHealthUpdateLocked(
        PodsToUpdateLocked(resource_name, current.get(), *source.last_devices, first));
  }
  current = source.last_devices;
  gone_without_devices_.erase(resource_name);
  DevicesChangedLocked(resource_name);
  ScheduleCheckpointLocked();
  ScheduleNotifyLocked();
}

std::pair<EndpointSharedPtr, EndpointSharedPtr> ManagerImpl::DisconnectLocked(
    const LiveEndpoint& live) {
  EndpointSharedPtr gone = live.endpoint;
  const bool supplied = live.supplies_devices;
  const std::string& resource_name = gone->resource_name();
  gone->MarkStopped(clock_.Now());
  auto sockets = live_endpoints_.find(resource_name);
  sockets->second.erase(SocketKey(*gone));
  if (sockets->second.empty()) {
    live_endpoints_.erase(sockets);
    MarkResourceUnhealthyLocked(resource_name);
    ScheduleNotifyLocked();
    return {gone, nullptr};
  }
  // The devices were the report of the plugin that went, and none of the others has sent one:
  // nothing vouches for them until one does.
  if (supplied && ServingCandidateLocked(resource_name)->last_devices == nullptr) {
    MarkResourceUnhealthyLocked(resource_name);
    ScheduleNotifyLocked();
  }
  ServeLocked(resource_name);
  return {gone, endpoints_[resource_name]};
}

void ManagerImpl::OnStreamEnded(EndpointSharedPtr endpoint, const absl::Status& status) {
  EndpointSharedPtr serving;
  bool disconnected = false;
  {
    absl::MutexLock lock(&mu_);
    // An endpoint deregistered, replaced or stopped went already: its end changes nothing.
    if (const LiveEndpoint* live = LiveEndpointLocked(*endpoint); live != nullptr) {
      serving = DisconnectLocked(*live).second;
      disconnected = true;
    }
  }
  if (disconnected) {
    DEVMGR_LOG(options_.logger, info, "Device plugin disconnected", "resourceName",
               endpoint->resource_name(), "endpoint", endpoint->socket_path().string(), "err",
               status, "servedBy", serving != nullptr ? serving->socket_path().string() : "");
  }
  // The count goes last: once it is 0, Stop may return and the host destroy the manager with
  // its registration server, after which the last endpoint must not be freed on this gRPC
  // thread (EndpointCallbacks::OnStreamEnded). So the references held here go first.
  serving.reset();
  endpoint.reset();
  absl::MutexLock lock(&mu_);
  --active_streams_;
}

void ManagerImpl::ForgetHealthLocked(const std::string& resource_name) {
  if (health_known_.erase(resource_name) > 0 && options_.resource_health_status) {
    QueueHealthUpdateLocked(pod_devices_.PodsHolding(resource_name));
  }
}

void ManagerImpl::MarkResourceUnhealthyLocked(const std::string& resource_name) {
  ForgetHealthLocked(resource_name);
  auto it = devices_.find(resource_name);
  if (it == devices_.end()) {
    gone_without_devices_.emplace(resource_name);
    return;
  }
  if (it->second->healthy_count() == 0) return;
  // Shared with checkpoint writes in progress, so changed in a copy.
  auto table = std::make_shared<DeviceTable>(*it->second);
  table->MarkAllUnhealthy();
  it->second = std::move(table);
  DevicesChangedLocked(resource_name);
}

bool ManagerImpl::ResourceGoneLocked(const std::string& resource_name, absl::Time now) const {
  auto it = endpoints_.find(resource_name);
  return it == endpoints_.end() ||
         it->second->StopGracePeriodExpired(now, options_.endpoint_stop_grace_period);
}

CapacityResult ManagerImpl::GetCapacity() {
  CapacityResult result;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_.Now();
    for (const auto& [resource, table] : devices_) {
      if (ResourceGoneLocked(resource, now)) {
        result.removed.push_back(resource);
        continue;
      }
      result.capacity[resource] = static_cast<int64_t>(table->size());
      result.allocatable[resource] = static_cast<int64_t>(table->healthy_count());
    }
    for (const auto& resource : result.removed) {
      endpoints_.erase(resource);
      devices_.erase(resource);
      DevicesChangedLocked(resource);
    }
    // A plugin that went away without sending devices leaves its resource at 0, to be removed
    // after the grace period like any other.
    for (auto it = gone_without_devices_.begin(); it != gone_without_devices_.end();) {
      if (!ResourceGoneLocked(*it, now)) {
        result.capacity.try_emplace(*it, 0);
        it = std::next(it);
        continue;
      }
      result.removed.push_back(*it);
      endpoints_.erase(*it);
      it = gone_without_devices_.erase(it);
    }
    if (!result.removed.empty()) {
      ScheduleCheckpointLocked();
      ScheduleNotifyLocked();
    }
  }
  for (const auto& resource : result.removed) {
    DEVMGR_LOG(options_.logger, info, "Device plugin resource removed after its grace period",
               "resourceName", resource);
  }
  return result;
}

namespace {

// HealthyDevices: the healthy devices of `table`.
DeviceMap HealthyDevices(const DeviceTable& table) {
  DeviceMap devices;
  for (const Device& device : table) {
    // Ordered by ID: appended at the end of the map.
    if (device.health == Health::kHealthy) devices.emplace_hint(devices.end(), device.id, device);
  }
  return devices;
}

}  // namespace

ResourceDevices ManagerImpl::GetAllocatableDevices() const {
  ResourceDevices result;
  absl::MutexLock lock(&mu_);
  // Upstream's allDevices.Filter(healthyDevices), except that a resource without a healthy
  // device is left out where upstream lists it with none (manager.h).
  for (const auto& [resource, table] : devices_) {
    DeviceMap healthy = HealthyDevices(*table);
    if (!healthy.empty()) result.emplace(resource, std::move(healthy));
  }
  return result;
}

DeviceMap ManagerImpl::GetAllocatableDevices(absl::string_view resource_name) const {
  SharedTable table;
  {
    absl::MutexLock lock(&mu_);
    auto it = devices_.find(resource_name);
    if (it == devices_.end()) return {};
    table = it->second;
  }
  // Never changed in place: read outside the lock.
  return HealthyDevices(*table);
}

std::map<std::string, uint64_t> ManagerImpl::AllocatableRevisions() const {
  absl::MutexLock lock(&mu_);
  return {table_revisions_.begin(), table_revisions_.end()};
}

ResourceDevices ManagerImpl::GetDevices(absl::string_view pod_uid,
                                        absl::string_view container_name) const {
  absl::MutexLock lock(&mu_);
  ResourceDevices result = pod_devices_.ContainerDevices(pod_uid, container_name);
  for (auto& [resource, devices] : result) {
    auto table = devices_.find(resource);
    for (auto& [id, device] : devices) {
      // A device the plugin no longer reports (or a plugin that is gone) is not healthy.
      const bool healthy = table != devices_.end() && table->second->IsHealthy(id);
      device.health = healthy ? Health::kHealthy : Health::kUnhealthy;
    }
  }
  return result;
}

uint64_t ManagerImpl::AllocationsRevision() const {
  absl::MutexLock lock(&mu_);
  return pod_devices_.revision();
}

uint64_t ManagerImpl::PodAllocationsRevision(absl::string_view pod_uid) const {
  absl::MutexLock lock(&mu_);
  return pod_devices_.PodRevision(pod_uid);
}

std::optional<std::vector<std::string>> ManagerImpl::PodsChangedSince(uint64_t revision) const {
  absl::MutexLock lock(&mu_);
  return pod_devices_.PodsChangedSince(revision);
}

std::vector<checkpoint::PodDevicesEntry> ManagerImpl::Allocations() const {
  absl::MutexLock lock(&mu_);
  return pod_devices_.ToCheckpoint();
}

bool ManagerImpl::RestoredWholeCheckpoint() const {
  absl::MutexLock lock(&mu_);
  return restored_whole_;
}

std::vector<ResourceSummary> ManagerImpl::GetResourceSummaries() const {
  std::vector<ResourceSummary> result;
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  result.reserve(endpoints_.size());
  for (const auto& [resource, endpoint] : endpoints_) {
    ResourceSummary& summary = result.emplace_back();
    summary.resource_name = resource;
    if (!endpoint->IsStopped()) {
      summary.state = EndpointState::kRunning;
    } else if (endpoint->StopGracePeriodExpired(now, options_.endpoint_stop_grace_period)) {
      summary.state = EndpointState::kExpired;
    } else {
      summary.state = EndpointState::kStopped;
    }
    // A plugin that has not sent its first snapshot has no entry yet: no devices.
    if (auto it = devices_.find(resource); it != devices_.end()) {
      summary.healthy_devices = static_cast<int64_t>(it->second->healthy_count());
      summary.unhealthy_devices =
          static_cast<int64_t>(it->second->size() - it->second->healthy_count());
    }
  }
  return result;
}

std::map<std::string, int64_t> ManagerImpl::UpdatePluginResources(
    absl::string_view pod_uid, std::map<std::string, int64_t> allocatable) const {
  absl::MutexLock lock(&mu_);
  if (!pod_devices_.HasPod(pod_uid)) return allocatable;
  for (const auto& [resource, held] : pod_devices_.HeldCounts()) {
    auto [it, added] = allocatable.try_emplace(resource, held);
    if (!added) it->second = std::max(it->second, held);
  }
  return allocatable;
}

bool ManagerImpl::ShouldResetExtendedResourceCapacity() const {
  {
    absl::MutexLock lock(&mu_);
    if (wiped_at_start_.has_value()) return *wiped_at_start_;
  }
  return HoldsNothing(store_.List());
}

absl::Status ManagerImpl::ValidatePlugin(absl::string_view resource_name,
                                         absl::string_view /*endpoint*/,
                                         const std::vector<std::string>& versions) {
  return CheckProbePlugin(resource_name, versions);
}

absl::Status ManagerImpl::RegisterPlugin(absl::string_view resource_name,
                                         absl::string_view endpoint,
                                         const std::vector<std::string>& /*versions*/) {
  {
    absl::MutexLock lock(&mu_);
    if (!serving_ || stopping_ || registrations_ != Registrations::kOpen) {
      return absl::FailedPreconditionError("the device manager is not running");
    }
    ++registrations_in_flight_;
  }
  absl::StatusOr<std::filesystem::path> socket = ResolveProbeSocket(endpoint);
  absl::Status status = socket.status();
  if (socket.ok()) {
    DEVMGR_LOG(options_.logger, info, "Registering plugin at endpoint", "plugin", resource_name,
               "endpoint", socket->string());
    status =
        ConnectPlugin(std::string(resource_name), *socket, absl::Now() + options_.dial_timeout);
  }
  absl::MutexLock lock(&mu_);
  --registrations_in_flight_;
  return status;
}

int ManagerImpl::RegistrationsInFlightForTest() const {
  absl::MutexLock lock(&mu_);
  return registrations_in_flight_;
}

void ManagerImpl::DeRegisterPlugin(absl::string_view resource_name, absl::string_view endpoint) {
  const std::filesystem::path socket =
      std::filesystem::path(std::string(endpoint)).lexically_normal();
  std::pair<EndpointSharedPtr, EndpointSharedPtr> disconnected;
  {
    absl::MutexLock lock(&mu_);
    auto resource = live_endpoints_.find(resource_name);
    if (resource == live_endpoints_.end()) return;
    auto it = resource->second.find(socket);
    // Another socket of the resource, or one that went already, is left alone.
    if (it == resource->second.end()) return;
    disconnected = DisconnectLocked(it->second);
  }
  disconnected.first->CancelStream();
  DEVMGR_LOG(options_.logger, info, "Deregistered device plugin", "resourceName", resource_name,
             "endpoint", socket.string(), "servedBy",
             disconnected.second != nullptr ? disconnected.second->socket_path().string() : "");
}

void ManagerImpl::AnnouncePluginWatcher() {
  const std::filesystem::path path = options_.plugin_dir / std::string(kDeprecationFileName);
  // O_NOFOLLOW: a symlink put there points nowhere we write. O_NONBLOCK: a FIFO put there fails
  // at once (ENXIO) instead of holding the host until a reader comes.
  const int fd = ::open(path.c_str(),
                        O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    DEVMGR_LOG(options_.logger, err, "Failed to create deprecation file at socket dir", "path",
               options_.plugin_dir.string(), "err", ErrnoStatus(error, "cannot create", path));
    return;
  }
  ::close(fd);
  DEVMGR_LOG(options_.logger, debug, "Created deprecation file", "path", path.string());
}

EndpointSharedPtr ManagerImpl::GetEndpoint(absl::string_view resource_name) const {
  absl::MutexLock lock(&mu_);
  auto it = endpoints_.find(resource_name);
  return it == endpoints_.end() ? nullptr : it->second;
}

ManagerPtr CreateManager(ManagerOptions options) {
  return std::make_unique<ManagerImpl>(std::move(options));
}

}  // namespace devmgr::devicemanager
