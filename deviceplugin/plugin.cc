#include "deviceplugin/plugin.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/errno_status.h"
#include "common/file_id.h"
#include "common/go_json.h"
#include "common/k8s_names.h"
#include "common/placed_socket.h"
#include "common/status.h"
#include "common/unix_socket.h"
#include "deviceplugin/device_plugin_service.h"
#include "deviceplugin/kubelet_socket_stat.h"
#include "deviceplugin/registry_service.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace devmgr::deviceplugin {
namespace {

constexpr char kApiVersion[] = "v1beta1";
constexpr char kDevicePluginType[] = "DevicePlugin";

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Which kubelet.sock is at the path: its device, inode and birth time, not its change time,
// which a chmod, chown or relabel of the socket changes too (no new kubelet). The birth time
// tells a socket bound anew on the inode number of the last one (ext4 hands a freed inode out
// again at once) from that one. Where the file system keeps none, such a socket is still seen as
// new when a check finds kubelet.sock missing in between, or the plugin's own socket removed (a
// starting kubelet removes the sockets in its folder before it binds kubelet.sock).
struct KubeletSocketId {
  dev_t dev = 0;
  ino_t ino = 0;
  int64_t birth_ns = 0;  // 0 where the file system keeps no birth time
  bool operator==(const KubeletSocketId&) const = default;
};

// StatKubeletSocket: the id of the kubelet.sock at `path`, nullopt when nothing is there, or
// the error of a look that tells neither (KubeletSocketStatError::kUnknown).
absl::StatusOr<std::optional<KubeletSocketId>> StatKubeletSocket(
    const std::filesystem::path& path) {
  struct statx stx {};
  if (::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_BTIME, &stx) == 0) {
    KubeletSocketId id{makedev(stx.stx_dev_major, stx.stx_dev_minor), stx.stx_ino, 0};
    if ((stx.stx_mask & STATX_BTIME) != 0) {
      id.birth_ns = int64_t{stx.stx_btime.tv_sec} * 1'000'000'000 + stx.stx_btime.tv_nsec;
    }
    return id;
  }
  int error = errno;
  if (ClassifyKubeletSocketStatError(error) == KubeletSocketStatError::kNoStatx) {
    // A kernel older than statx (3.x), or a seccomp profile that refuses it: no birth time.
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) return KubeletSocketId{st.st_dev, st.st_ino, 0};
    error = errno;
  }
  if (ClassifyKubeletSocketStatError(error) == KubeletSocketStatError::kGone) return std::nullopt;
  return ErrnoStatus(error, "cannot stat", path);
}

}  // namespace

bool IsValidDeviceType(absl::string_view type) {
  if (type.empty() || type.size() > 63 || !IsAlnum(type.front()) || !IsAlnum(type.back())) {
    return false;
  }
  for (char c : type) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

bool IsValidNamespace(absl::string_view ns) {
  // The kubelet's own rule, on a name with this namespace and a valid type.
  return !ns.empty() && !absl::StrContains(ns, '/') &&
         IsExtendedResourceName(absl::StrCat(ns, "/a"));
}

absl::Status CheckNamespace(absl::string_view ns) {
  if (IsValidNamespace(ns)) return absl::OkStatus();
  // The kubelet keeps these for its native resources and a quota's names, valid subdomains as
  // they may be.
  const absl::string_view reason =
      absl::EndsWith(ns, "kubernetes.io")
          ? "a namespace ending in kubernetes.io is kept for native resources"
      : absl::StartsWith(ns, "requests.") ? "a name beginning with requests. is a resource quota's"
                                          : "want a DNS subdomain like example.com";
  return absl::InvalidArgumentError(
      absl::StrCat("invalid resource namespace \"", ns, "\": ", reason));
}

struct Plugin::Endpoint {
  std::string device_type;
  std::filesystem::path socket;
  std::shared_ptr<const DeviceMap> devices;
  // Declared before the server: the server is destroyed first.
  std::unique_ptr<DevicePluginService> service;
  std::unique_ptr<RegistryService> registry;
  std::unique_ptr<grpc::Server> server;
  // Our socket at `socket`, once placed there.
  std::optional<PlacedSocket> placed;
  std::optional<FileId> socket_id() const {
    return placed.has_value() ? placed->id() : std::nullopt;
  }
  // Serves: our server is bound to `at_path`, what is at `socket` now, changed since or not (a
  // chmod, chown or relabel changes its ctime): while our server holds it, no other file can
  // have its inode number.
  bool Serves(const std::optional<FileId>& at_path) const {
    return server != nullptr && at_path.has_value() && socket_id().has_value() &&
           at_path->Same(*socket_id());
  }
  // kubelet.sock at the last successful Register; reset when it must be done again.
  std::optional<KubeletSocketId> registered_kubelet;
  // The CDI spec file as this instance last wrote it (its change time included: a file written
  // since, by another instance, may have the inode number of a freed one), and the devices it
  // holds. Removed at the end only if still that file.
  std::optional<FileId> cdi_file;
  std::shared_ptr<const DeviceMap> cdi_devices;
  // The last failed write's error, logged once while the checks' writes fail the same way.
  std::string cdi_error;
  // Another process's socket at the path that nobody answered on at the last check: taken back
  // only if still so at the next (another program's socket bound but not listening yet looks the
  // same for a moment; this SDK moves a listening one into place).
  std::optional<FileId> unanswered;
};

Plugin::Plugin(PluginOptions options, Scanner* scanner)
    : options_(std::move(options)), scanner_(scanner) {}

absl::StatusOr<std::unique_ptr<Plugin>> Plugin::Start(PluginOptions options, Scanner* scanner) {
  if (absl::Status valid = CheckNamespace(options.resource_namespace); !valid.ok()) return valid;
  const std::filesystem::path& folder = options.registration == RegistrationMode::kKubeletSocket
                                            ? options.plugin_dir
                                            : options.registry_dir;
  // The shortest socket name a device type gives (SocketPath). Before, only "<folder>/x.sock" was
  // checked: a long namespace started, served nothing and said so at every check, for ever.
  absl::Status path_ok =
      PlacedSocket(folder / absl::StrCat(options.resource_namespace, "-x.sock")).Check();
  if (!path_ok.ok()) return path_ok;
  if (options.check_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("check_interval must be positive");
  }
  // The Allocate answer carries the envs (CdiOptions::with_envs).
  if (options.cdi.has_value()) options.cdi->with_envs = false;
  std::unique_ptr<Plugin> plugin(new Plugin(std::move(options), scanner));
  plugin->loop_.Post([p = plugin.get()] { p->ScheduleCheck(); });
  if (scanner != nullptr) {
    Plugin* p = plugin.get();
    p->scanner_thread_ = std::thread([p] {
      absl::Status status = p->scanner_->Scan(*p, p->stop_scanning_);
      if (!status.ok()) {
        DEVMGR_LOG(p->options_.logger, err, "Device scanner failed", "err", status);
      }
    });
  }
  return plugin;
}

Plugin::~Plugin() { Stop(); }

std::filesystem::path Plugin::SocketPath(const std::string& device_type) const {
  const std::filesystem::path& folder = options_.registration == RegistrationMode::kKubeletSocket
                                            ? options_.plugin_dir
                                            : options_.registry_dir;
  return folder / absl::StrCat(options_.resource_namespace, "-", device_type, ".sock");
}

std::string Plugin::ResourceName(const std::string& device_type) const {
  return absl::StrCat(options_.resource_namespace, "/", device_type);
}

void Plugin::Notify(DeviceTree tree) {
  bool schedule = false;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    pending_tree_ = std::move(tree);
    schedule = !std::exchange(apply_scheduled_, true);
  }
  if (schedule) loop_.Post([this] { ApplyPendingTree(); });
}

bool Plugin::Servable(const std::string& device_type) {
  absl::Status status = IsValidDeviceType(device_type)
                            ? PlacedSocket(SocketPath(device_type)).Check()
                            : absl::InvalidArgumentError("not a valid resource name part");
  if (status.ok()) return true;
  // Once while the type stays in the trees: nothing changes until it is gone.
  if (skipped_types_.insert(device_type).second) {
    if (IsValidDeviceType(device_type)) {
      DEVMGR_LOG(options_.logger, err, "Skipping device type whose socket path cannot be served",
                 "deviceType", device_type, "err", status);
    } else {
      DEVMGR_LOG(options_.logger, err, "Skipping device type with an invalid name", "deviceType",
                 device_type);
    }
  }
  return false;
}

void Plugin::ApplyPendingTree() {
  std::optional<DeviceTree> tree;
  {
    absl::MutexLock lock(&mu_);
    // Stop sets stopped_ before it posts its cleanup, so a tree whose turn comes after the
    // cleanup (its Notify found the plugin running a moment before Stop) finds it set. Before,
    // such a tree was served after Stop had returned: socket, CDI spec and registration, and a
    // server whose destruction waited for the kubelet's stream.
    if (stopped_) return;
    tree = std::exchange(pending_tree_, std::nullopt);
    apply_scheduled_ = false;
  }
  if (!tree.has_value()) return;
  auto types = tree->ReleaseTypes();
  DropUnsafeDevices(types);
  for (auto& [type, devices] : types) {
    const bool is_new = endpoints_.count(type) == 0;
    if (is_new && !Servable(type)) continue;
    std::unique_ptr<Endpoint>& endpoint = endpoints_[type];
    if (is_new) {
      endpoint = std::make_unique<Endpoint>();
      endpoint->device_type = type;
      endpoint->socket = SocketPath(type);
    } else if (*endpoint->devices == devices) {
      continue;  // unchanged: nothing to tell the kubelet
    }
    endpoint->devices = std::make_shared<const DeviceMap>(std::move(devices));
    // Before the kubelet hears of the devices, so that the CDI names Allocate gives resolve; and
    // only while serving: an instance standing aside (another took its socket over) leaves the
    // spec to the one that serves, and writes its own when it serves again (StartServer), as a
    // new endpoint does.
    if (!is_new && endpoint->Serves(StatId(endpoint->socket))) WriteCdiSpecOf(*endpoint);
    if (endpoint->service != nullptr) endpoint->service->Update(endpoint->devices);
    Publish(*endpoint);
    if (is_new && StartServer(*endpoint).ok() &&
        options_.registration == RegistrationMode::kKubeletSocket) {
      RegisterWithKubelet(*endpoint);
    }
  }
  for (auto it = skipped_types_.begin(); it != skipped_types_.end();) {
    it = types.count(*it) == 0 ? skipped_types_.erase(it) : std::next(it);
  }
  for (auto it = endpoints_.begin(); it != endpoints_.end();) {
    if (types.count(it->first) != 0) {
      ++it;
      continue;
    }
    DEVMGR_LOG(options_.logger, info, "Device type gone; no longer serving it", "resourceName",
               ResourceName(it->first));
    RemoveEndpoint(*it->second);
    it = endpoints_.erase(it);
  }
}

void Plugin::DropUnsafeDevices(std::map<std::string, DeviceMap, std::less<>>& types) {
  std::set<std::pair<std::string, std::string>> skipped;
  for (auto& [type, devices] : types) {
    for (auto it = devices.begin(); it != devices.end();) {
      if (IsWireSafe(it->first, it->second)) {
        ++it;
        continue;
      }
      // Once while the device stays in the trees.
      auto key = std::make_pair(type, it->first);
      if (skipped_devices_.count(key) == 0) {
        DEVMGR_LOG(options_.logger, err,
                   "Skipping device whose ID, paths, envs or annotations are not UTF-8",
                   "deviceType", type, "device", ToValidUtf8(it->first));
      }
      skipped.insert(std::move(key));
      it = devices.erase(it);
    }
  }
  skipped_devices_ = std::move(skipped);
}

absl::Status Plugin::StartServer(Endpoint& endpoint) {
  // Bound under a temporary name and moved into place: stopping, the server unlinks only that
  // name, never a socket another instance has put at the path since.
  PlacedSocket placed(endpoint.socket);
  absl::Status status = placed.Check();
  std::error_code ec;
  std::filesystem::create_directories(endpoint.socket.parent_path(), ec);
  if (status.ok() && ec) {
    status = ErrnoStatus(ec, "cannot create", endpoint.socket.parent_path());
  }
  if (!status.ok()) {
    DEVMGR_LOG(options_.logger, err, "Cannot serve device plugin", "resourceName",
               ResourceName(endpoint.device_type), "err", status);
    return status;
  }
  endpoint.service = std::make_unique<DevicePluginService>(
      endpoint.device_type, options_.hooks, options_.cdi, hook_loop_, options_.logger);
  endpoint.service->Update(endpoint.devices);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(placed.bind_path()), grpc::InsecureServerCredentials());
  builder.RegisterService(endpoint.service.get());
  if (options_.registration == RegistrationMode::kPluginsRegistry) {
    pluginregistration::PluginInfo info;
    info.set_type(kDevicePluginType);
    info.set_name(ResourceName(endpoint.device_type));
    info.set_endpoint(endpoint.socket.string());
    info.add_supported_versions(kApiVersion);
    endpoint.registry = std::make_unique<RegistryService>(
        std::move(info), [this, type = endpoint.device_type](bool ok, const std::string& error) {
          OnRegistryStatus(type, ok, error);
          return grpc::Status::OK;  // as upstream's device plugin stub
        });
    builder.RegisterService(endpoint.registry.get());
  }
  endpoint.server = builder.BuildAndStart();
  if (endpoint.server == nullptr) {
    endpoint.service.reset();
    endpoint.registry.reset();
    status = absl::UnavailableError(absl::StrCat("cannot listen on ", placed.bind_path().string()));
  } else {
    // The spec of the devices served here, before anyone can reach the socket: an instance
    // taking the path over replaces the spec of the one it takes it from (which leaves it alone
    // from then on), and one serving again after standing aside finds the spec gone or
    // another's.
    WriteCdiSpecOf(endpoint);
    status = placed.Place();
    if (status.ok()) endpoint.placed = std::move(placed);
    if (!status.ok()) StopServer(endpoint);
  }
  if (!status.ok()) {
    DEVMGR_LOG(options_.logger, err, "Cannot serve device plugin", "resourceName",
               ResourceName(endpoint.device_type), "err", status);
    return status;
  }
  endpoint.registered_kubelet.reset();
  {
    absl::MutexLock lock(&mu_);
    served_[endpoint.device_type].type.registered = false;
  }
  DEVMGR_LOG(options_.logger, info, "Serving device plugin", "resourceName",
             ResourceName(endpoint.device_type), "endpoint", endpoint.socket.string());
  return absl::OkStatus();
}

void Plugin::StopServer(Endpoint& endpoint) {
  if (endpoint.server == nullptr) return;
  endpoint.service->FinishStreams();
  endpoint.server->Shutdown(std::chrono::system_clock::now() +
                            absl::ToChronoMilliseconds(options_.shutdown_grace));
  endpoint.service->WaitForStreamsDone();
  endpoint.server.reset();
  endpoint.registry.reset();
  endpoint.service.reset();
  // Only if it is still the one we placed: never another process's.
  if (endpoint.placed.has_value()) (void)endpoint.placed->Remove();
  endpoint.placed.reset();
}

void Plugin::RemoveEndpoint(Endpoint& endpoint) {
  StopServer(endpoint);
  RemoveCdiSpecOf(endpoint);
  absl::MutexLock lock(&mu_);
  served_.erase(endpoint.device_type);
}

std::filesystem::path Plugin::CdiSpecPath(const std::string& device_type) const {
  return options_.cdi->folder / CdiSpecFileName(*options_.cdi, device_type);
}

void Plugin::WriteCdiSpecOf(Endpoint& endpoint) {
  if (!options_.cdi.has_value()) return;
  if (endpoint.cdi_devices == endpoint.devices && endpoint.cdi_file.has_value() &&
      StatId(CdiSpecPath(endpoint.device_type)) == endpoint.cdi_file) {
    return;  // ours, with these devices
  }
  std::optional<FileId> placed;
  absl::Status status =
      WriteCdiSpec(*options_.cdi, endpoint.device_type, *endpoint.devices, &placed);
  // Ours is the file at the path that holds what this write wrote, even when a step after its
  // rename (the folder's sync) failed. Before, such a file was nobody's, and Stop left it; and
  // the file at the path a moment after the rename was taken for ours, so that an instance that
  // another's spec replaced at once kept that spec for its own. Without one, the previous file
  // is still ours to remove if it is there, and the spec is written again at the next check.
  if (placed.has_value()) endpoint.cdi_file = placed;
  endpoint.cdi_devices = status.ok() && placed.has_value() ? endpoint.devices : nullptr;
  if (status.ok()) {
    endpoint.cdi_error.clear();
  } else if (endpoint.cdi_error != status.ToString()) {
    DEVMGR_LOG(options_.logger, err, "Cannot write CDI spec", "deviceType", endpoint.device_type,
               "err", status);
    endpoint.cdi_error = status.ToString();
  }
}

void Plugin::RemoveCdiSpecOf(Endpoint& endpoint) {
  if (!options_.cdi.has_value() || !endpoint.cdi_file.has_value()) return;
  const std::filesystem::path path = CdiSpecPath(endpoint.device_type);
  // Only the file this instance wrote, as PlacedSocket::Remove does with the socket: a newer
  // instance of the plugin (a DaemonSet's update with a surge) that took the socket over has
  // written its own since and answers Allocate with names that must resolve. Before, the spec
  // was removed whoever had written it. A file changed since (a chmod) is left too.
  if (StatId(path) == endpoint.cdi_file) {
    absl::Status status = RemoveCdiSpec(*options_.cdi, endpoint.device_type);
    if (!status.ok()) {
      DEVMGR_LOG(options_.logger, err, "Cannot remove CDI spec", "deviceType", endpoint.device_type,
                 "err", status);
    }
  }
  endpoint.cdi_file.reset();
  endpoint.cdi_devices.reset();
}

void Plugin::RegisterWithKubelet(Endpoint& endpoint) {
  const std::filesystem::path kubelet_socket = options_.plugin_dir / kKubeletSocketName;
  // Not known (a look that told nothing): registered again at the next check that can tell.
  const std::optional<KubeletSocketId> kubelet_id =
      StatKubeletSocket(kubelet_socket).value_or(std::nullopt);
  v1beta1::RegisterRequest request;
  request.set_version(kApiVersion);
  request.set_endpoint(endpoint.socket.filename().string());
  request.set_resource_name(ResourceName(endpoint.device_type));
  *request.mutable_options() = endpoint.service->Options();

  // The kubelet dials us back inside Register, so this blocks for up to register_timeout; it
  // runs on the plugin's own loop, never on a gRPC thread.
  auto stub = v1beta1::Registration::NewStub(
      grpc::CreateChannel(UnixTarget(kubelet_socket), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoMilliseconds(options_.register_timeout));
  v1beta1::Empty reply;
  const absl::Status status = FromGrpcStatus(stub->Register(&context, request, &reply));

  absl::MutexLock lock(&mu_);
  ServedType& served = served_[endpoint.device_type].type;
  served.registered = status.ok();
  if (status.ok()) {
    endpoint.registered_kubelet = kubelet_id;
    ++served.registrations;
    served.last_error.clear();
    DEVMGR_LOG(options_.logger, info, "Registered device plugin with kubelet", "resourceName",
               request.resource_name(), "endpoint", request.endpoint());
  } else {
    // Retried at the next check.
    endpoint.registered_kubelet.reset();
    if (served.last_error != status.ToString()) {
      DEVMGR_LOG(options_.logger, err, "Cannot register device plugin with kubelet", "resourceName",
                 request.resource_name(), "err", status);
    }
    served.last_error = status.ToString();
  }
}

void Plugin::OnRegistryStatus(const std::string& device_type, bool registered,
                              const std::string& error) {
  absl::MutexLock lock(&mu_);
  auto it = served_.find(device_type);
  if (it == served_.end()) return;
  ServedType& served = it->second.type;
  served.registered = registered;
  if (registered) {
    ++served.registrations;
    served.last_error.clear();
  } else {
    served.last_error = error;
  }
  DEVMGR_LOG(options_.logger, info, "Registration status from kubelet", "resourceName",
             ResourceName(device_type), "registered", registered, "err", error);
}

void Plugin::ScheduleCheck() {
  loop_.PostAfter(options_.check_interval, [this] { CheckKubelet(); });
}

void Plugin::CheckKubelet() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;  // Stop's cleanup has run or comes next: no more checks
  }
  const std::filesystem::path kubelet_socket = options_.plugin_dir / kKubeletSocketName;
  for (auto& [type, endpoint] : endpoints_) {
    const std::optional<FileId> socket_id = StatId(endpoint->socket);
    if (!endpoint->Serves(socket_id)) {
      const bool other = socket_id.has_value() && socket_id != endpoint->socket_id();
      const bool answered = other && SomeoneListens(endpoint->socket);
      if (other && !answered && endpoint->server != nullptr && endpoint->unanswered != socket_id) {
        endpoint->unanswered = socket_id;
        continue;
      }
      endpoint->unanswered.reset();
      if (answered) {
        // Another instance bound the path since (the newest takes over, as upstream's stub
        // does): taking it back would have the two take it from each other forever. Served
        // again once the path is free (that instance gone, or the kubelet's restart removing
        // it). Stopping leaves the other's socket in place (StartServer).
        if (endpoint->server != nullptr) {
          DEVMGR_LOG(options_.logger, warn,
                     "Device plugin socket taken over by another process; not serving it until "
                     "it is free",
                     "resourceName", ResourceName(type), "endpoint", endpoint->socket.string());
          StopServer(*endpoint);
        }
        continue;
      }
      if (endpoint->server != nullptr) {
        DEVMGR_LOG(options_.logger, info, "Device plugin socket removed; serving it again",
                   "resourceName", ResourceName(type), "endpoint", endpoint->socket.string());
        StopServer(*endpoint);
      }
      if (!StartServer(*endpoint).ok()) continue;
    }
    // Serving: the spec on disk is ours, or written again. Two instances serving the path again
    // in one check window (a kubelet's restart during an update with a surge) each write theirs
    // before each places its socket, so the one that serves may find the other's spec, which
    // that one removes as its own when it stops. Before, the serving instance was left without a
    // spec until its devices changed, and runtimes could not resolve the names Allocate gave.
    WriteCdiSpecOf(*endpoint);
    if (options_.registration != RegistrationMode::kKubeletSocket) continue;
    // A new kubelet, not a chmod, chown or relabel of kubelet.sock (KubeletSocketId). Before,
    // its change time was compared too, and such a change made the plugin register again and
    // the kubelet reconnect a healthy plugin.
    const absl::StatusOr<std::optional<KubeletSocketId>> kubelet_id =
        StatKubeletSocket(kubelet_socket);
    if (!kubelet_id.ok()) {
      // Neither there nor gone (ENOMEM, EACCES, ...): as it was until a check can tell. Before,
      // any error but ENOSYS and EPERM counted as the kubelet gone, and the plugin registered
      // again at the next check.
      DEVMGR_LOG(options_.logger, debug, "Cannot tell which kubelet socket is there",
                 "resourceName", ResourceName(type), "err", kubelet_id.status());
    } else if (!kubelet_id->has_value()) {
      // No kubelet: the next kubelet.sock is a new one's, even on this one's inode number.
      endpoint->registered_kubelet.reset();
    } else if (*kubelet_id != endpoint->registered_kubelet) {
      RegisterWithKubelet(*endpoint);
    }
  }
  ScheduleCheck();
}

void Plugin::Publish(const Endpoint& endpoint) {
  absl::MutexLock lock(&mu_);
  PublishLocked(endpoint);
}

void Plugin::PublishLocked(const Endpoint& endpoint) {
  ServedState& served = served_[endpoint.device_type];
  served.type.device_type = endpoint.device_type;
  served.type.resource_name = ResourceName(endpoint.device_type);
  served.type.socket = endpoint.socket;
  served.devices = endpoint.devices;
}

std::vector<ServedType> Plugin::Served() const {
  std::vector<ServedState> states;
  {
    absl::MutexLock lock(&mu_);
    states.reserve(served_.size());
    for (const auto& [type, served] : served_) states.push_back(served);
  }
  std::vector<ServedType> out;
  out.reserve(states.size());
  for (ServedState& state : states) {
    ServedType& served = out.emplace_back(std::move(state.type));
    if (state.devices == nullptr) continue;
    served.devices = state.devices->size();
    for (const auto& [id, info] : *state.devices) {
      if (info.health == Health::kHealthy) ++served.healthy;
    }
  }
  return out;
}

void Plugin::Stop() {
  stop_once_.Run([this] { StopNow(); });
}

void Plugin::StopNow() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  stop_scanning_.RequestStop();
  if (scanner_thread_.joinable()) scanner_thread_.join();
  absl::Notification done;
  loop_.Post([this, &done] {
    for (auto& [type, endpoint] : endpoints_) RemoveEndpoint(*endpoint);
    endpoints_.clear();
    done.Notify();
  });
  done.WaitForNotification();
  loop_.Stop();
  hook_loop_.Stop();
  DEVMGR_LOG(options_.logger, info, "Device plugin stopped", "resourceNamespace",
             options_.resource_namespace);
}

}  // namespace devmgr::deviceplugin
