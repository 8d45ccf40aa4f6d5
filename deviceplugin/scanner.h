// Scanner and Notifier: the seam between a device plugin's discovery code and the SDK.
//
// The plugin implements Scanner. The SDK calls Scan once, on a thread of its own, and Scan loops:
// it looks at the host, builds a complete DeviceTree and hands it to Notifier::Notify, then waits
// (with StopToken::WaitForStop) until the next look, or until an event source of its own calls
// StopToken::Wake. The SDK compares each tree with the previous one and tells the kubelet only
// what changed.
#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "deviceplugin/device_tree.h"

namespace devmgr::deviceplugin {

// StopToken tells a running Scan that the plugin is stopping, and lets a scanner that watches
// events of its own (a driver's error reports, say) cut its wait short to look at the host again.
// Owned by whoever calls Scan (the SDK). Thread-safe.
class StopToken {
 public:
  StopToken() = default;
  StopToken(const StopToken&) = delete;
  StopToken& operator=(const StopToken&) = delete;

  // RequestStop: every wait returns true from now on. Called by the SDK when the plugin stops.
  void RequestStop();

  bool stop_requested() const;

  // WaitForStop blocks for up to `timeout` and returns true as soon as a stop is requested, false
  // when the time ran out first or a Wake came (one Wake ends one wait: the one in progress, or
  // the next if none is). Scanners sleep only through this, so that they stop promptly.
  bool WaitForStop(absl::Duration timeout) const;

  // Wake ends the scanner's current or next wait early, from any thread; wakes that come before
  // that wait ends count as one.
  void Wake() const;

 private:
  bool StopOrWoken() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  mutable bool woken_ ABSL_GUARDED_BY(mu_) = false;
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
