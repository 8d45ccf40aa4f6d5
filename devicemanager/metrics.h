// ManagerMetrics: what the Manager tells a host that exports metrics, at the points where
// upstream's kubelet updates the same metrics (pkg/kubelet/metrics): a registration request
// received (kubelet_device_plugin_registration_total), each Allocate call to a plugin
// (kubelet_device_plugin_alloc_duration_seconds), and, beyond upstream, each refused
// admission with a short reason, each durable checkpoint write and each health update dropped. The
// Manager has no metrics system of its own (the daemon's is in node/node_metrics.h); state
// that is read rather than counted (endpoints by state, devices by health) comes from
// Manager::GetResourceSummaries at scrape time.
//
// Threads: called from gRPC threads (PluginRegistered), admission threads and the manager's
// loop thread, concurrently, never with the manager's lock held. Implementations must be
// thread-safe and must not block or call back into the Manager. Every method does nothing
// by default, so a host overrides only what it exports.
#pragma once

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace devmgr::devicemanager {

// Reasons given to AdmissionRefused: short, stable label values.
// The container is not in the pod given.
inline constexpr absl::string_view kRefusedNotFound = "not_found";
// A request no pod spec can make: a negative count.
inline constexpr absl::string_view kRefusedInvalidRequest = "invalid_request";
// The manager is not started, or is stopping.
inline constexpr absl::string_view kRefusedNotRunning = "not_running";
// A requested resource has no plugin (never registered, or gone with no endpoint).
inline constexpr absl::string_view kRefusedNoPlugin = "no_plugin";
// Too few healthy, free devices.
inline constexpr absl::string_view kRefusedNotEnoughDevices = "not_enough_devices";
// The container already holds devices that no longer fit: its request changed, or they are
// no longer healthy.
inline constexpr absl::string_view kRefusedStaleAllocation = "stale_allocation";
// Another admission of the same container is in flight.
inline constexpr absl::string_view kRefusedAborted = "aborted";
// Allocate or GetPreferredAllocation failed, timed out or answered nothing usable.
inline constexpr absl::string_view kRefusedPluginError = "plugin_error";
// The checkpoint could not be made durable.
inline constexpr absl::string_view kRefusedCheckpointWrite = "checkpoint_write";
// A broken invariant of the manager itself.
inline constexpr absl::string_view kRefusedInternal = "internal";

inline constexpr absl::string_view kAdmissionRefusalReasons[] = {
    kRefusedNotFound,         kRefusedInvalidRequest,  kRefusedNotRunning, kRefusedNoPlugin,
    kRefusedNotEnoughDevices, kRefusedStaleAllocation, kRefusedAborted,    kRefusedPluginError,
    kRefusedCheckpointWrite,  kRefusedInternal,
};

class ManagerMetrics {
 public:
  virtual ~ManagerMetrics() = default;

  // PluginRegistered: a Register request for `resource_name` arrived on kubelet.sock, counted
  // before the plugin is dialled, as upstream's registration handler does (so a refused request
  // counts too), but only when `resource_name` is a valid extended resource name: any other
  // may be megabytes long, each a series of its own. Registrations through plugins_registry are
  // not counted, as upstream.
  virtual void PluginRegistered(absl::string_view /*resource_name*/) {}

  // AllocationDone: one Allocate call to the plugin of `resource_name` returned (with an
  // answer or an error) after `duration`.
  virtual void AllocationDone(absl::string_view /*resource_name*/, absl::Duration /*duration*/) {}

  // AdmissionRefused: Allocate or AdmitPod returned an error, for one of the reasons above;
  // called once per refused call (AdmitPod stops at its first refused container).
  virtual void AdmissionRefused(absl::string_view /*reason*/) {}

  // CheckpointWritten: one durable write of the checkpoint file (encode excluded) took
  // `duration` and succeeded or not.
  virtual void CheckpointWritten(absl::Duration /*duration*/, bool /*ok*/) {}

  // ResourceUpdateDropped: with resource_health_status on, an update of device health (see
  // Manager::TakeResourceUpdates) was dropped because kResourceUpdatesCapacity were waiting.
  virtual void ResourceUpdateDropped() {}
};

}  // namespace devmgr::devicemanager
