// HealthCache: the last health each DRA driver reported for each of its devices (KEP-4680), as
// the kubelet's health info cache keeps it (pkg/kubelet/cm/dra/healthinfo.go). A driver's
// NodeWatchResources stream (dra/health_stream.h) feeds Update with each report; the pod status
// (dra/claim_health.h) reads Get. A report is trusted for the device's health check timeout: a
// device not reported for longer reads as Unknown. When a driver's stream ends, ClearDriver
// forgets all of its devices.
//
// State: `<state_dir>/dra_health_state`, the kubelet's file: plain JSON without a checksum, the Go
// rendering of its DevicesHealthMap,
//   {"<driver>":{"Devices":{"<pool>/<device>":{"PoolName":..,"DeviceName":..,"Health":"Healthy",
//     "LastUpdated":"<RFC 3339>","HealthCheckTimeout":<nanoseconds>,"Message":".."}}}}
// written whole (temporary file, then rename) after every change. A file that cannot be read or
// parsed is logged and ignored: the cache starts empty, as the kubelet's does. One a kubelet
// wrote is taken as it is, longer messages and more devices included (the limits below apply
// to reports; the pod status cuts messages anyway).
//
// Thread-safety: every method may be called from any thread at once. Reads never wait for file
// I/O; writers are serialised so the file always holds the newest state.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/file_store.h"
#include "common/logging.h"

namespace devmgr::dra {

// File name of the health state in the kubelet's root folder.
inline constexpr char kHealthStateName[] = "dra_health_state";

// How long a report holds when the driver names no timeout for the device (upstream's
// DefaultHealthTimeout).
inline constexpr absl::Duration kDefaultHealthTimeout = absl::Seconds(30);

// The health of a device as the cache keeps it (upstream's state.DeviceHealthStatus).
enum class DeviceHealthStatus { kUnknown, kHealthy, kUnhealthy };

// DeviceHealthStatusName: the file's spelling ("Unknown", "Healthy", "Unhealthy").
absl::string_view DeviceHealthStatusName(DeviceHealthStatus status);

// Go's zero time.Time (0001-01-01T00:00:00Z): LastUpdated of a device the file gives no time for.
absl::Time GoZeroTime();

// One device's health (upstream's state.DeviceHealth).
struct DeviceHealth {
  std::string pool_name;
  std::string device_name;
  DeviceHealthStatus health = DeviceHealthStatus::kUnknown;
  // When the cache last took a report of the device (not the driver's own time).
  absl::Time last_updated = GoZeroTime();
  // How long a report holds; zero means kDefaultHealthTimeout (what older files hold).
  absl::Duration health_check_timeout = absl::ZeroDuration();
  // The driver's words about the device; empty when it gave none.
  std::string message;

  bool operator==(const DeviceHealth&) const = default;
};

// The longest message the pod status carries; a longer one is cut to leave room for "...". The
// cache keeps messages cut so.
inline constexpr size_t kMaxHealthMessageBytes = 1024;

// TruncateHealthMessage: `message` if it fits in kMaxHealthMessageBytes, else its first bytes
// and "..." in exactly that many bytes or fewer: the cut never splits a UTF-8 character (Go's
// JSON would turn the broken bytes into U+FFFD and the text would outgrow the limit).
std::string TruncateHealthMessage(absl::string_view message);

// The most devices the cache keeps for one driver; a report's devices beyond them, new to the
// cache, are left out (and logged). Upstream keeps every device a driver ever reported.
inline constexpr size_t kMaxHealthDevicesPerDriver = size_t{1} << 16;

// "<pool>/<device>", the key of a device in the cache and the file.
std::string DeviceKey(absl::string_view pool_name, absl::string_view device_name);

// Driver name -> device key -> health (upstream's DevicesHealthMap).
using DevicesHealthMap = std::map<std::string, std::map<std::string, DeviceHealth>>;

// EncodeHealthState: the file's bytes for `state`, as Go's encoding/json writes them (keys
// sorted, Go's escaping, times in UTC).
std::string EncodeHealthState(const DevicesHealthMap& state);

// DecodeHealthState reads the file's bytes. InvalidArgument, naming the field, for anything that
// is not a health state; `null` (the file of a kubelet with a nil map) is an empty state. Field
// names match without regard to case and unknown fields are ignored, as Go's decoder does.
absl::StatusOr<DevicesHealthMap> DecodeHealthState(absl::string_view bytes);

struct HealthCacheOptions {
  // The folder of dra_health_state; empty keeps the cache in memory only.
  std::filesystem::path state_dir;
  // The time source of LastUpdated and of the timeouts. Not owned; null means RealClock().
  const Clock* clock = nullptr;
  LoggerPtr logger;
  // Faults for tests, passed to the FileStore.
  FileStore::FaultHook fault_hook;
};

class HealthCache {
 public:
  // Loads the state file, if any (a broken one is logged and ignored).
  explicit HealthCache(HealthCacheOptions options);
  HealthCache(const HealthCache&) = delete;
  HealthCache& operator=(const HealthCache&) = delete;

  // Get: the device's health now. An unknown device, or one whose last report is older than its
  // timeout, reads Unknown with no message (only its names set).
  DeviceHealth Get(absl::string_view driver_name, absl::string_view pool_name,
                   absl::string_view device_name) const ABSL_LOCKS_EXCLUDED(mu_, write_mu_);

  // Update takes one report of `driver_name` (upstream's updateHealthInfo): every device listed is
  // stored with the time now (its message cut to kMaxHealthMessageBytes; a device new to the
  // cache only while the driver has fewer than kMaxHealthDevicesPerDriver, devices that read
  // Unknown and are not in the report being dropped first to make room); a device the report
  // leaves out turns Unknown (message dropped) once its timeout has passed. Returns the devices
  // that changed: new ones, those whose health, message or timeout differ, and those that just
  // turned Unknown. The file is written when anything changed; a failed write is logged (the cache
  // holds the news anyway) and returned with the change list in `*write_status` when that is not
  // null.
  std::vector<DeviceHealth> Update(const std::string& driver_name,
                                   std::vector<DeviceHealth> devices,
                                   absl::Status* write_status = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_, write_mu_);

  // ClearDriver forgets every device of `driver_name` and writes the file (upstream writes it
  // even when there was nothing to forget). Returns the write's status.
  absl::Status ClearDriver(const std::string& driver_name) ABSL_LOCKS_EXCLUDED(mu_, write_mu_);

  // Snapshot: a copy of everything held, as stored (no ageing applied).
  DevicesHealthMap Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // WriteLocked writes `bytes` to the file; a no-op without a state folder.
  absl::Status WriteLocked(absl::string_view bytes) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);

  const Clock& clock_;
  const LoggerPtr logger_;
  const bool persistent_;
  const FileStore store_;
  // Serialises the changes with their file writes, so the last write holds the last change.
  // Taken before mu_, never the other way round; mu_ is never held across file I/O.
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  DevicesHealthMap health_ ABSL_GUARDED_BY(mu_);
  // The drivers told of devices left out (kMaxHealthDevicesPerDriver), logged once each until
  // their stream ends.
  std::set<std::string> full_drivers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::dra
