// The simulated devices of `devmgr plugin fake`: a Scanner that reports N fake devices spread
// over K NUMA nodes and flips their health on a schedule or on request, and hooks that inject
// Allocate latency, errors and hangs and choose a preferred-allocation policy (which may hang).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "deviceplugin/hooks.h"
#include "deviceplugin/scanner.h"

namespace devmgr::plugins {

enum class PreferredPolicy { kNone, kFirst, kNuma };

struct FakeDeviceOptions {
  std::string device_type;  // "gpu" of "example.com/gpu"
  int64_t devices = 1;
  int64_t numa_nodes = 0;  // 0: no topology
  std::string id_prefix = "dev-";
  absl::Duration flip_every = absl::ZeroDuration();  // 0: no scheduled flips
  // Each device is also a device node: the host's /dev/null at /dev/devmgr-fake/<id>. With CDI,
  // which refuses a device that changes nothing in the container (its env is the Allocate
  // answer's), and a device node any host has.
  bool null_device_nodes = false;
};

// FakeScanner: device i is "<prefix><i>" on NUMA node i % K, healthy at first. Each flip toggles
// the health of the next device, round-robin.
class FakeScanner final : public deviceplugin::Scanner {
 public:
  explicit FakeScanner(FakeDeviceOptions options) : options_(std::move(options)) {}

  absl::Status Scan(deviceplugin::Notifier& notifier, const deviceplugin::StopToken& stop) override;

  // RequestFlip asks for one flip, which a running Scan makes at once (one that has not started
  // yet, as it starts). Thread-safe; not async-signal-safe (it takes a lock).
  void RequestFlip();

 private:
  deviceplugin::DeviceTree BuildTree() const;

  const FakeDeviceOptions options_;
  std::atomic<int64_t> flips_requested_{0};
  // The running Scan's token, which RequestFlip wakes.
  absl::Mutex mu_;
  const deviceplugin::StopToken* scanning_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Touched only by the scanner thread.
  std::vector<bool> unhealthy_;
  int64_t next_flip_ = 0;
};

struct FakeHookOptions {
  PreferredPolicy preferred = PreferredPolicy::kNone;
  absl::Duration allocate_latency = absl::ZeroDuration();
  std::string allocate_error;   // non-empty: every Allocate fails with it
  bool allocate_hang = false;   // every Allocate waits until Release, then fails
  bool preferred_hang = false;  // every GetPreferredAllocation waits until Release, then fails
};

// FakeHooks: an Allocator that delays, fails or hangs before using the default answer, and a
// PreferredAllocator for the chosen policy, which may hang too.
class FakeHooks final : public deviceplugin::Allocator, public deviceplugin::PreferredAllocator {
 public:
  explicit FakeHooks(FakeHookOptions options) : options_(std::move(options)) {}

  // The SDK hooks this fake needs (a preferred allocator only with a policy).
  deviceplugin::Hooks AsHooks();

  // Release ends every hang and delay, now and later, failing their calls (Unavailable, as a
  // plugin that went away mid-call): call before stopping the plugin.
  void Release() {
    if (!released_.HasBeenNotified()) released_.Notify();
  }

  deviceplugin::HookResult<v1beta1::AllocateResponse> Allocate(
      const std::string& device_type, const v1beta1::AllocateRequest& request) override;
  deviceplugin::HookResult<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const std::string& device_type, const v1beta1::PreferredAllocationRequest& request) override;

 private:
  // The answer of a call whose wait Release ended.
  static absl::Status StoppedDuringTheCall();

  const FakeHookOptions options_;
  absl::Notification released_;
};

}  // namespace devmgr::plugins
