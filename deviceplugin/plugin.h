// Plugin: the device plugin SDK's entry point. It runs a plugin's Scanner on a thread of its own,
// serves each device type the scanner reports as the extended resource "<namespace>/<type>"
// (one v1beta1.DevicePlugin gRPC server per type, each on its own unix socket), registers each
// with the kubelet, and keeps it registered:
//
//  * kKubeletSocket: the socket is <plugin_dir>/<namespace>-<type>.sock and the plugin calls
//    v1beta1.Registration/Register on <plugin_dir>/kubelet.sock once it is serving.
//  * kPluginsRegistry: the socket is <registry_dir>/<namespace>-<type>.sock and serves
//    pluginregistration.Registration beside v1beta1.DevicePlugin, for the kubelet's plugin
//    watcher (GetInfo names the same socket as the endpoint).
//
// Re-registration: every check_interval the plugin looks at the kubelet side. If its own socket
// was removed or replaced (a kubelet removes the sockets in device-plugins/ when it starts), it
// binds a fresh one; but a socket another process listens on (a second instance of the plugin,
// which took the path over at its start) is left to it: this one stops serving and binds again
// only once the path is free; in kKubeletSocket mode it registers again whenever kubelet.sock was
// re-created (another inode or birth time, or missing at a check in between; a chmod, chown or
// relabel is no new kubelet), its own socket was bound again, or the last attempt failed. In
// kPluginsRegistry mode the fresh socket is what makes the watcher register it again.
//
// CDI spec files follow the socket: an instance writes a type's spec while it serves the type
// (and at each check writes it again if the file there is not the one it wrote), an instance
// standing aside leaves it to the one serving, and each removes only the file it wrote, not one
// another instance has written since.
//
// Shutdown (Stop or destruction) stops the scanner, ends the ListAndWatch streams, stops the
// servers, and removes the plugin's sockets and CDI spec files (each only if still its own).
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/event_loop.h"
#include "common/logging.h"
#include "common/stop_once.h"
#include "deviceplugin/cdi.h"
#include "deviceplugin/device_tree.h"
#include "deviceplugin/hooks.h"
#include "deviceplugin/scanner.h"

namespace devmgr::deviceplugin {

enum class RegistrationMode { kKubeletSocket, kPluginsRegistry };

// IsValidNamespace: whether `ns` can prefix an extended resource as the kubelet's Register
// checks it (IsExtendedResourceName): a DNS-1123 subdomain, of at most 244 characters (the
// kubelet checks "requests." + the name), without "kubernetes.io" at its end ("xkubernetes.io"
// neither) and not starting with "requests.".
bool IsValidNamespace(absl::string_view ns);
// CheckNamespace: InvalidArgument saying why `ns` is no valid namespace ("invalid resource
// namespace "kubernetes.io": a namespace ending in kubernetes.io is kept for native
// resources"), OK for one that is.
absl::Status CheckNamespace(absl::string_view ns);

// IsValidDeviceType: whether `type` can be the name part of an extended resource:
// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63 characters. Types that are not are
// skipped by Notify.
bool IsValidDeviceType(absl::string_view type);

inline constexpr char kDefaultPluginDir[] = "/var/lib/kubelet/device-plugins";
inline constexpr char kDefaultRegistryDir[] = "/var/lib/kubelet/plugins_registry";
inline constexpr char kKubeletSocketName[] = "kubelet.sock";

struct PluginOptions {
  // Resources are "<resource_namespace>/<device type>", e.g. "example.com" + "gpu".
  std::string resource_namespace;
  RegistrationMode registration = RegistrationMode::kKubeletSocket;
  // Holds kubelet.sock and, in kKubeletSocket mode, the plugin's sockets.
  std::filesystem::path plugin_dir = kDefaultPluginDir;
  // Holds the plugin's sockets in kPluginsRegistry mode.
  std::filesystem::path registry_dir = kDefaultRegistryDir;
  // How often the kubelet side is checked for a restart (see the file comment).
  absl::Duration check_interval = absl::Seconds(1);
  // Deadline of one Register call.
  absl::Duration register_timeout = absl::Seconds(10);
  // How long stopping waits for unary calls in progress before cancelling them.
  absl::Duration shutdown_grace = absl::Seconds(2);
  // Set: write CDI spec files and return CDI names from Allocate, for the devices with device
  // nodes or mounts and an ID CDI accepts (InCdiSpec; envs are in the Allocate answer,
  // with_envs is made false).
  std::optional<CdiOptions> cdi;
  Hooks hooks;
  LoggerPtr logger;
};

// What the plugin serves for one device type; a snapshot for status output and tests.
struct ServedType {
  std::string device_type;
  std::string resource_name;
  std::filesystem::path socket;
  size_t devices = 0;
  size_t healthy = 0;
  // kKubeletSocket: the last Register succeeded. kPluginsRegistry: the last
  // NotifyRegistrationStatus said registered.
  bool registered = false;
  // Successful registrations so far (both modes).
  int registrations = 0;
  std::string last_error;  // of the last failed registration, or empty
};

class Plugin final : public Notifier {
 public:
  // Start validates `options`, starts the plugin's threads and, if `scanner` is set, runs
  // scanner->Scan on the scanner thread. With a null scanner the host calls Notify itself. The
  // scanner and the hooks must outlive the Plugin. InvalidArgument for a bad namespace or a
  // socket path over the unix limit: "<folder>/<namespace>-x.sock", the shortest a type gives.
  // Device types appear (and register) asynchronously, as trees arrive.
  static absl::StatusOr<std::unique_ptr<Plugin>> Start(PluginOptions options, Scanner* scanner);

  // Stops (see Stop).
  ~Plugin() override;
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  // Notify replaces the served device tree (Notifier). Thread-safe, never blocks on the kubelet;
  // applied in order, and a tree that arrives before the previous one was applied replaces it.
  // Types whose name is not a valid resource name part, or whose socket path is over the unix
  // limit, are skipped, logged once while they stay in the trees. A tree notified while Stop
  // runs is not served.
  void Notify(DeviceTree tree) override ABSL_LOCKS_EXCLUDED(mu_);

  // Stop shuts the plugin down and removes its sockets and CDI files, those still its own (not
  // what a newer instance put at their paths since). Blocks until the scanner has returned, a
  // Register call in flight has ended (at most register_timeout), every stream has ended and every
  // hook in progress has returned (hooks must return). Idempotent: a Stop called while another
  // runs returns when that one has (common/stop_once.h). Not from the scanner thread.
  void Stop();

  // Served returns what is being served, sorted by device type. Thread-safe; it counts each
  // type's devices and healthy devices as it is called, outside the plugin's lock.
  std::vector<ServedType> Served() const ABSL_LOCKS_EXCLUDED(mu_);

  // SocketPath is where `device_type` is (or would be) served.
  std::filesystem::path SocketPath(const std::string& device_type) const;
  std::string ResourceName(const std::string& device_type) const;

 private:
  struct Endpoint;
  // A served type as Served reports it, with its devices: their counts are taken when Served
  // asks, so that a new tree of 100,000 devices is not walked an extra time before it is served.
  struct ServedState {
    ServedType type;
    std::shared_ptr<const DeviceMap> devices;
  };

  Plugin(PluginOptions options, Scanner* scanner);

  // Loop-thread steps.
  void ApplyPendingTree() ABSL_LOCKS_EXCLUDED(mu_);
  // Servable: whether a type without an endpoint yet can be served (its name, its socket path);
  // logs the reason once if not.
  bool Servable(const std::string& device_type);
  void CheckKubelet();
  void ScheduleCheck();
  absl::Status StartServer(Endpoint& endpoint);
  void StopNow() ABSL_LOCKS_EXCLUDED(mu_);
  void StopServer(Endpoint& endpoint);
  void RegisterWithKubelet(Endpoint& endpoint);
  void RemoveEndpoint(Endpoint& endpoint);
  // With options_.cdi: write the type's spec unless it is still the file this instance wrote,
  // with the same devices; remove it if it is still that file.
  std::filesystem::path CdiSpecPath(const std::string& device_type) const;
  void WriteCdiSpecOf(Endpoint& endpoint);
  void RemoveCdiSpecOf(Endpoint& endpoint);
  void DropUnsafeDevices(std::map<std::string, DeviceMap, std::less<>>& types);
  void PublishLocked(const Endpoint& endpoint) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Publish(const Endpoint& endpoint) ABSL_LOCKS_EXCLUDED(mu_);
  void OnRegistryStatus(const std::string& device_type, bool registered, const std::string& error)
      ABSL_LOCKS_EXCLUDED(mu_);

  const PluginOptions options_;
  Scanner* const scanner_;

  mutable absl::Mutex mu_;
  std::optional<DeviceTree> pending_tree_ ABSL_GUARDED_BY(mu_);
  bool apply_scheduled_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, ServedState> served_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Runs StopNow once (common/stop_once.h).
  StopOnce stop_once_;

  // Owned by the loop thread: touched only there (and in Stop after the loop has drained).
  std::map<std::string, std::unique_ptr<Endpoint>> endpoints_;
  // Types in the last tree that cannot be served (Servable), already logged.
  std::set<std::string> skipped_types_;
  // Devices (type, ID) in the last tree that are not IsWireSafe, already logged.
  std::set<std::pair<std::string, std::string>> skipped_devices_;

  StopToken stop_scanning_;
  // Threads last, in reverse order of use: the scanner feeds the loop, the loop's servers post
  // to the hook loop.
  EventLoop hook_loop_;
  EventLoop loop_;
  std::thread scanner_thread_;
};

}  // namespace devmgr::deviceplugin
