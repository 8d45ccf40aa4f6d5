// Watcher: the node side of plugin registration through plugins_registry/ (upstream's
// pkg/kubelet/pluginmanager: pluginwatcher, reconciler, operationexecutor and cache in one
// object). It watches the registry folder and its sub-folders with inotify, keeps the desired
// state (the sockets that exist, each with the time it appeared) and the actual state (the
// plugins registered with a handler), and reconciles the two as upstream does: unregister first,
// then register; one operation in flight per socket path; exponential back-off per socket path
// after a failed operation (500 ms, doubling, at most 2 m 2 s).
//
// Registering a socket is upstream's handshake: dial (10 s), GetInfo (1 s), the handler for
// PluginInfo.type, ValidatePlugin, RegisterPlugin, then NotifyRegistrationStatus (5 s) with true,
// or with false and upstream's error text (wire contract §C). The handshakes and the handler
// calls run on worker threads started for them (up to `workers`); the inotify descriptor and the
// retry timers live on the watcher's own event loop thread, which never waits for a plugin.
//
// Deliberate differences from upstream, each keeping its behaviour:
// - Reconciliation is event-driven instead of a 1 s poll: it runs after every batch of inotify
//   events, when an operation ends, and when a back-off expires.
// - PluginInfo is untrusted: a name over max_name_bytes, or an endpoint with a NUL byte, is
//   refused with NotifyRegistrationStatus(false, "RegisterPlugin error -- plugin validation
//   failed with err: ...") before any handler sees it. Any other endpoint goes to the handler,
//   which dials it, as upstream.
// - A queue overflow (IN_Q_OVERFLOW) rescans the tree: sockets that vanished are removed, new
//   ones added, and a socket whose inode changed counts as re-created (one whose inode number
//   was reused, by its birth time, or its change time where the file system has no birth time;
//   a socket whose mode or owner changed is then taken for re-created too).
// - The newest upstream's connection monitor (periodic GetInfo probes of registered plugins) is
//   not part of this watcher.
// - Symlinks under the folder are never followed (fsnotify's os.Stat follows them), not even one
//   swapped in for a folder on a socket's path, or for the socket, while the watcher walks,
//   handles that folder's events or dials the socket: each name below the folder is opened
//   without following a symlink, folders are watched and sockets dialled through what was
//   opened (/proc/self/fd), never through the path again. A folder whose name starts with '.'
//   is skipped with what is under it, as a socket's is (upstream's walk checks names only, and
//   enters hidden folders).
// - A socket or folder moved away counts as removed (upstream ignores a rename, so the plugin
//   stays registered under a name that is gone), and so does a socket whose name a symlink or
//   any other file is renamed onto (no IN_DELETE comes for it).
// - A socket path holding ',' is never dialled (gRPC's unix resolver would split it and dial
//   another socket); it stays in the desired state, tried again after each back-off.
// - A socket no process listens on fails its dial within a second (RegistrationClient::Dial),
//   where upstream's dial waits out its 10 s in a goroutine of its own. A socket the plugin
//   replaces (unlink, bind anew) while it is dialled is left as soon as a connection to it
//   fails, and the new one at its name is dialled, as upstream's dial of the path reaches it.
// - A plugin its handler's RegisterPlugin refused is not deregistered when its socket goes:
//   upstream's DeRegisterPlugin by its name and endpoint drops the plugin registered under them
//   from another socket (a second socket naming a DRA driver's endpoint, refused as already
//   registered, then removed, took the driver away).
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/logging.h"
#include "pluginwatcher/handler.h"

namespace devmgr::pluginwatcher {

struct WatcherOptions {
  // The folder to watch, created (mode 0755, with parents) if missing.
  std::filesystem::path registry_dir;
  // Upstream's handshake deadlines (operation_generator.go).
  absl::Duration dial_timeout = absl::Seconds(10);
  absl::Duration get_info_timeout = absl::Seconds(1);
  absl::Duration notify_timeout = absl::Seconds(5);
  // Upstream's back-off after a failed operation on a socket path (exponentialbackoff).
  absl::Duration initial_backoff = absl::Milliseconds(500);
  absl::Duration max_backoff = absl::Minutes(2) + absl::Seconds(2);

  // Threads for handshakes and handler calls, each started for an operation and ended when no
  // other waits: at most this many plugins are handled at once, the others wait their turn.
  // Upstream gives each socket's operation a goroutine, without a limit; this one is far above
  // the plugins a node runs, so that plugins that hang do not delay the others, and bounds the
  // threads a folder of hung sockets can make. A plugin that never answers holds a thread for
  // at most dial_timeout + get_info_timeout per attempt, and is then in back-off (a socket
  // nobody listens on, for a second: RegistrationClient::Dial); the handler's own work comes on
  // top (a device plugin's registration dials the service socket the plugin names, for up to
  // the device manager's dial timeout, also when nothing is there yet).
  int workers = 64;
  // The longest PluginInfo.name accepted: a qualified name, a DNS subdomain prefix (253) plus
  // "/" plus a name (63).
  size_t max_name_bytes = 317;

  // Time source of the desired-state timestamps and the back-offs; null means MonotonicClock(). The
  // handshake deadlines are gRPC's and stay on the system clock. Not owned; must outlive the
  // watcher.
  const Clock* clock = nullptr;

  // Logs go here only; null logs nothing.
  LoggerPtr logger;

  // ForRootDir: the kubelet's layout under `root_dir`: registry_dir = root_dir/plugins_registry.
  static WatcherOptions ForRootDir(const std::filesystem::path& root_dir);
};

// A socket in the desired state: it exists in the registry (upstream's dsw PluginInfo).
struct DesiredPlugin {
  std::string socket_path;
  // When the watcher saw it appear; a re-created socket gets a later one.
  absl::Time timestamp;
};

// A plugin in the actual state: RegisterPlugin was called for it (upstream's asw PluginInfo).
struct RegisteredPlugin {
  std::string socket_path;
  absl::Time timestamp;  // of the desired-state entry it was registered for
  std::string type;
  std::string name;
  std::string endpoint;
};

class Watcher {
 public:
  virtual ~Watcher() = default;

  // AddHandler makes `handler` receive the plugins whose PluginInfo.type is `type`, replacing an
  // earlier handler for that type (plugins already registered keep the old one until they go
  // away). Not owned: it must outlive the watcher's Stop. Thread-safe, never blocks; handlers
  // added after Start apply from the next registration attempt.
  virtual void AddHandler(absl::string_view type, PluginHandler& handler) = 0;

  // Start creates the registry folder if needed, starts the threads, watches the folder, and
  // takes in the sockets already there. Call once, from one thread, before Stop. Blocks only
  // for the folder walk. FailedPrecondition, saying so, when /proc/self/fd is not available
  // (/proc not mounted): every folder and socket under the registry is reached through it. After
  // an error the watcher is stopped.
  virtual absl::Status Start() = 0;

  // Stop ends watching: it cancels handshakes in flight, waits for handler calls in progress to
  // return, joins every thread and closes every descriptor. It deregisters nothing: a stopping
  // node agent leaves its plugins registered, as the kubelet does. Idempotent and final (no
  // Start after Stop; a Stop called while another runs returns when that one has); not from a
  // handler, nor while Start runs. The destructor calls it.
  virtual void Stop() = 0;

  // Snapshots of the desired and actual state, sorted by socket path. Thread-safe.
  virtual std::vector<DesiredPlugin> GetPluginsToRegister() const = 0;
  virtual std::vector<RegisteredPlugin> GetRegisteredPlugins() const = 0;
};

using WatcherPtr = std::unique_ptr<Watcher>;

// CreateWatcher returns a watcher that has not started.
WatcherPtr CreateWatcher(WatcherOptions options);

}  // namespace devmgr::pluginwatcher
