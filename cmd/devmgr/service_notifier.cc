#include "cmd/devmgr/service_notifier.h"

#include <systemd/sd-daemon.h>

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace devmgr::cli {

ServiceNotifier::ServiceNotifier() {
  uint64_t usec = 0;
  // Also checks that WATCHDOG_PID, when set, is this process.
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
    watchdog_interval_ = absl::Microseconds(static_cast<int64_t>(usec)) / 2;
  }
}

void ServiceNotifier::Ready(const std::string& status) const {
  Notify(absl::StrCat("READY=1\nSTATUS=", status));
}

void ServiceNotifier::Stopping() const { Notify("STOPPING=1\nSTATUS=Stopping"); }

void ServiceNotifier::Watchdog() const { Notify("WATCHDOG=1"); }

void ServiceNotifier::Notify(const std::string& state) const {
  // Nothing happens without NOTIFY_SOCKET. A failure to notify is not the daemon's to act on:
  // systemd reports a service that never became ready.
  sd_notify(0, state.c_str());
}

}  // namespace devmgr::cli
