// Daemon: `devmgr serve` assembled, for the command and for tests. Under one root folder, in a
// real node's layout, it runs the device manager (registration on device-plugins/kubelet.sock,
// the checkpoint beside it), the plugin watcher on plugins_registry/ with the device plugin
// handler, the PodResources service on pod-resources/kubelet.sock, and the admin API on
// devmgr.sock (mode 0600), and, when asked, Prometheus metrics. It is its own pod source
// (PodRegistry), so a restart keeps every admitted or recovered pod's devices. After work it
// hands freed heap memory back to the kernel (heap_trimmer.h). One daemon per root:
// <root>/devmgr.lock.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cmd/devmgr/topology_policy.h"
#include "common/logging.h"
#include "devicemanager/manager.h"
#include "devicemanager/types.h"
#include "podresources/rate_limiter.h"

namespace devmgr::cli {

struct DaemonOptions {
  std::filesystem::path root_dir = "/var/lib/kubelet";
  // How long a vanished plugin's resource keeps its capacity (upstream: 5 minutes).
  absl::Duration endpoint_grace = devicemanager::kEndpointStopGracePeriod;
  // Largest message accepted from a plugin (PodResources responses are not limited).
  int max_message_bytes = devicemanager::kDefaultMaxMessageBytes;
  // Deadline of each call to a plugin (upstream has none).
  absl::Duration plugin_call_timeout = devicemanager::kDefaultPluginCallTimeout;
  // How long admission waits for a known resource's plugin to come back (upstream: 0).
  absl::Duration admission_wait = absl::Seconds(30);
  podresources::RateLimitOptions podresources_rate_limit;
  TopologyPolicyKind topology_policy = TopologyPolicyKind::kNone;
  // Where Prometheus metrics are served (common/metrics_http_server.h); empty for nowhere.
  std::string metrics_address;
  LoggerPtr logger;
};

// The daemon's sockets and files, derived from the root folder.
struct DaemonPaths {
  explicit DaemonPaths(const std::filesystem::path& root);
  std::filesystem::path root;
  std::filesystem::path plugin_dir;           // device-plugins/
  std::filesystem::path registry_dir;         // plugins_registry/
  std::filesystem::path podresources_socket;  // pod-resources/kubelet.sock
  std::filesystem::path admin_socket;         // devmgr.sock
  std::filesystem::path lock_file;            // devmgr.lock
};

class Daemon {
 public:
  // Start takes the lock, reads the pod record and the checkpoint, and starts every service.
  // FailedPrecondition when another daemon holds the root; the failing service's error
  // otherwise (then everything started is stopped again).
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(const DaemonOptions& options);
  // Stops if still running.
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Stop ends the admin and PodResources services (open streams end), the watcher and the
  // device manager (the checkpoint is written), and removes the daemon's sockets. Idempotent.
  void Stop();

  // UpdateNodeStatus does what a kubelet's node status loop does with devices: reads capacity
  // and allocatable (which ends resources whose grace period has passed) and logs changes.
  // The serve command calls it periodically.
  void UpdateNodeStatus();

  devicemanager::Manager& manager();
  const DaemonPaths& paths() const;
  // The metrics address actually bound (the port filled in), or empty.
  std::string metrics_address() const;

 private:
  struct State;
  explicit Daemon(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace devmgr::cli
