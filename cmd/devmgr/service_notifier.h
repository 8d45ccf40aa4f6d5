// ServiceNotifier: what `devmgr serve` tells a service manager that started it as Type=notify:
// READY=1 once every socket is listening, STOPPING=1 when it begins to stop, and WATCHDOG=1 at
// half the interval systemd's WatchdogSec asks for. Without NOTIFY_SOCKET in the environment
// (not started by systemd) it does nothing. systemd's notify protocol (sd_notify(3)) is spoken
// here, one datagram per message to the unix socket NOTIFY_SOCKET names, rather than through
// libsystemd, which with the libraries it loads cost every devmgr process 1 ms and 1 MiB at start.
#pragma once

#include <optional>
#include <string>

#include "absl/time/time.h"

namespace devmgr::cli {

class ServiceNotifier {
 public:
  // Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID, once. The environment is left as it
  // is (changing it while threads run is not safe).
  ServiceNotifier();

  // Ready: the service is up; `status` is a line for `systemctl status`.
  void Ready(const std::string& status) const;
  // Stopping: the service has begun to stop.
  void Stopping() const;
  // Watchdog: the service is alive.
  void Watchdog() const;
  // WatchdogInterval: how often to call Watchdog (half of WatchdogSec); std::nullopt when
  // systemd asked for no watchdog.
  std::optional<absl::Duration> WatchdogInterval() const { return watchdog_interval_; }

 private:
  void Notify(const std::string& state) const;

  std::optional<absl::Duration> watchdog_interval_;
  // The sockaddr_un of NOTIFY_SOCKET, as bytes to pass to sendto; empty when there is none.
  std::string socket_address_;
};

}  // namespace devmgr::cli
