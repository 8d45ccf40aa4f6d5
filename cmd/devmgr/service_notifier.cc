#include "cmd/devmgr/service_notifier.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace devmgr::cli {
namespace {

// WatchdogUsec: WATCHDOG_USEC when the watchdog is asked of this process: set, a positive
// number, and WATCHDOG_PID (when set) this process's pid, as sd_watchdog_enabled(3) checks.
std::optional<uint64_t> WatchdogUsec() {
  const char* usec_text = std::getenv("WATCHDOG_USEC");
  uint64_t usec = 0;
  if (usec_text == nullptr || !absl::SimpleAtoi(usec_text, &usec) || usec == 0) {
    return std::nullopt;
  }
  if (const char* pid_text = std::getenv("WATCHDOG_PID"); pid_text != nullptr) {
    int64_t pid = 0;
    if (!absl::SimpleAtoi(pid_text, &pid) || pid != ::getpid()) return std::nullopt;
  }
  return usec;
}

}  // namespace

ServiceNotifier::ServiceNotifier() {
  if (std::optional<uint64_t> usec = WatchdogUsec(); usec.has_value()) {
    watchdog_interval_ = absl::Microseconds(static_cast<int64_t>(*usec)) / 2;
  }
  // A socket file's path, or an abstract socket's name after "@" (sd_notify(3)); anything else
  // (unset, or a kind of socket this does not speak) notifies nothing.
  const char* target = std::getenv("NOTIFY_SOCKET");
  if (target == nullptr || (target[0] != '/' && target[0] != '@')) return;
  const size_t length = std::strlen(target);
  sockaddr_un address{};
  if (length >= sizeof(address.sun_path)) return;
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, target, length);
  if (target[0] == '@') address.sun_path[0] = '\0';
  socket_address_ = std::string(reinterpret_cast<const char*>(&address),
                                offsetof(sockaddr_un, sun_path) + length);
}

void ServiceNotifier::Ready(const std::string& status) const {
  Notify(absl::StrCat("READY=1\nSTATUS=", status));
}

void ServiceNotifier::Stopping() const { Notify("STOPPING=1\nSTATUS=Stopping"); }

void ServiceNotifier::Watchdog() const { Notify("WATCHDOG=1"); }

void ServiceNotifier::Notify(const std::string& state) const {
  if (socket_address_.empty()) return;
  // A failure to notify is not the daemon's to act on: systemd reports a service that never
  // became ready.
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  static_cast<void>(::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                             reinterpret_cast<const sockaddr*>(socket_address_.data()),
                             static_cast<socklen_t>(socket_address_.size())));
  ::close(fd);
}

}  // namespace devmgr::cli
