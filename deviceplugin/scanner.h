// Scanner and Notifier: the seam between a device plugin's discovery code and the SDK.
//
// The plugin implements Scanner. The SDK calls Scan once, on a thread of its own, and Scan loops:
// it looks at the host, builds a complete DeviceTree and hands it to Notifier::Notify, then waits
// (with StopToken::WaitForStop) until the next look. The SDK compares each tree with the previous
// one and tells the kubelet only what changed.
#pragma once

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "deviceplugin/device_tree.h"

namespace devmgr::deviceplugin {

// StopToken tells a running Scan that the plugin is stopping. Thread-safe.
class StopToken {
 public:
  explicit StopToken(const absl::Notification& stop) : stop_(stop) {}

  bool stop_requested() const { return stop_.HasBeenNotified(); }

  // WaitForStop blocks for up to `timeout` and returns true as soon as a stop is requested
  // (false when the time ran out first). Scanners sleep only through this, so that they stop
  // promptly.
  bool WaitForStop(absl::Duration timeout) const {
    return stop_.WaitForNotificationWithTimeout(timeout);
  }

 private:
  const absl::Notification& stop_;
};

// Notifier receives complete device trees. Implemented by the SDK.
class Notifier {
 public:
  virtual ~Notifier() = default;
  // Notify replaces what the plugin offers with `tree`: device types missing from it stop being
  // served. Thread-safe and never blocks on the kubelet: a tree that arrives while an older one
  // is still being applied replaces it (only the newest tree matters).
  virtual void Notify(DeviceTree tree) = 0;
};

// Scanner is the plugin's discovery loop. Implemented by the plugin.
class Scanner {
 public:
  virtual ~Scanner() = default;
  // Scan runs on the SDK's scanner thread until `stop` is requested, then returns OK. A non-OK
  // return before that is logged by the SDK and ends scanning; the devices last notified stay
  // served. Scan may block (file I/O, sysfs walks), but must return soon after a stop request.
  virtual absl::Status Scan(Notifier& notifier, const StopToken& stop) = 0;
};

}  // namespace devmgr::deviceplugin
