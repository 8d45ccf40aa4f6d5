// DriverRegistry: the DRA drivers registered on the node and how to reach them, upstream's
// DRAPluginManager (pkg/kubelet/cm/dra/plugin); it tells whether each driver is usable (an
// endpoint connected), and the owner decides when ResourceSlices are wiped (slice_cleanup.h).
// Drivers register through the plugin watcher (plugins_registry/, type "DRAPlugin"): the host
// forwards the watcher's three handler calls here, as node/device_plugin_handler.h does for device
// plugins, so that dra/ does not depend on pluginwatcher/.
//
// A driver may have several endpoints at once (a rolling update starts the new plugin before
// the old one stops); calls go to the newest connected one, else to the newest.
//
// A driver has one health stream (NodeWatchResources), on its newest endpoint when that one
// lists a DRAResourceHealth service (v1 or v1alpha1) in its supported_versions; the stream is
// reopened while that endpoint is the newest, and its reports go to the HealthSink. A newer
// endpoint takes the stream over, and the health the old one reported stays until the new one
// reports; an older endpoint's deregistration leaves the stream alone. When no endpoint is left,
// or the newest serves no health, the stream's end is reported (and the host forgets the
// driver's health). Upstream's kubelet streams from every endpoint into the one per-driver
// cache, so an old endpoint overwrites what the new one reported and its deregistration clears
// it (kubernetes issue 140818); devmgr keeps to the endpoint that calls go to.
//
// Thread-safety: every method may be called from any thread at once; none blocks on a driver.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dra/connection_monitor.h"
#include "dra/driver_client.h"
#include "dra/health_stream.h"

namespace devmgr::dra {

// The DRAPlugin services devmgr speaks, newest first.
inline constexpr absl::string_view kSupportedServices[] = {kDraPluginServiceV1,
                                                           kDraPluginServiceV1beta1};

// ChooseService: the first service of the driver's `supported_versions`, in the driver's order,
// that devmgr speaks. Errors with upstream's texts: an empty list, or none of them.
absl::StatusOr<std::string> ChooseService(const std::vector<std::string>& supported_versions);

// HealthSink: where the health streams of the registered drivers report, on their threads.
class HealthSink {
 public:
  virtual ~HealthSink() = default;
  virtual void HealthReported(const std::string& driver_name,
                              const healthapi::NodeWatchResourcesResponse& response) = 0;
  virtual void HealthStreamEnded(const std::string& driver_name, const HealthStreamEnd& end) = 0;
};

struct DriverRegistryOptions {
  // Deadline of each call to a driver.
  absl::Duration call_timeout = kDefaultCallTimeout;
  // Told of every call. Not owned; may be null.
  ManagerMetrics* metrics = nullptr;
  // Where health streams report. Not owned; null: none are opened.
  HealthSink* health = nullptr;
  absl::Duration health_retry_period = kHealthStreamRetryPeriod;
  // Told whether a driver is usable (has an endpoint connected) each time that may have changed:
  // an endpoint registered, deregistered, connected or disconnected. Called with the registry's
  // lock held: it must not call the registry. Empty: connections are not watched.
  std::function<void(const std::string& driver_name, bool usable)> on_usable_change;
};

class DriverRegistry {
 public:
  explicit DriverRegistry(DriverRegistryOptions options = {});
  // Stops every health stream.
  ~DriverRegistry();
  DriverRegistry(const DriverRegistry&) = delete;
  DriverRegistry& operator=(const DriverRegistry&) = delete;

  // StopHealthStreams stops every health stream and opens no more: no report reaches the sink
  // after it returns, and their ends are not reported (the health they reported stays). For the
  // owner's destruction.
  void StopHealthStreams() ABSL_LOCKS_EXCLUDED(health_mu_);

  // ValidatePlugin checks, with upstream's texts, that the driver's name is one the API takes
  // ("invalid DRA driver name ...": a DNS subdomain of at most 63 bytes) and its endpoint an
  // absolute socket address ("empty DRA plugin endpoint ...", "... must be an absolute path",
  // "... is longer than 107 bytes ..."); then that the driver speaks a service devmgr knows
  // ("invalid supported gRPC versions of DRA driver plugin NAME at endpoint PATH: ...") and that
  // its endpoint can be dialled as it is ("invalid endpoint of DRA driver plugin NAME: ...",
  // CheckDialable). Unlike the newest kubelet, an endpoint outside the node's root folder is
  // taken: dialling the absolute path a plugin names is what kubelets did before, and creates
  // nothing there.
  absl::Status ValidatePlugin(absl::string_view driver_name, absl::string_view endpoint,
                              const std::vector<std::string>& versions) const;
  // RegisterPlugin adds an endpoint of the driver, with a channel that starts connecting at
  // once. The same endpoint twice is refused ("endpoint PATH already registered for DRA driver
  // plugin NAME").
  absl::Status RegisterPlugin(absl::string_view driver_name, absl::string_view endpoint,
                              const std::vector<std::string>& versions)
      ABSL_LOCKS_EXCLUDED(health_mu_, mu_);
  // DeRegisterPlugin removes the endpoint; calls in flight on it finish. Unknown ones are
  // ignored.
  void DeRegisterPlugin(absl::string_view driver_name, absl::string_view endpoint)
      ABSL_LOCKS_EXCLUDED(health_mu_, mu_);

  // Get: the endpoint calls to `driver_name` go to. Errors with upstream's texts: "DRA driver
  // name is empty", "DRA driver NAME is not registered" (FailedPrecondition: the driver may
  // still come).
  absl::StatusOr<std::shared_ptr<const DriverClient>> Get(absl::string_view driver_name) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Endpoint {
    std::shared_ptr<const DriverClient> client;
    // The health service the endpoint streams on (PickHealthService); empty: none.
    std::string health_service;
    // As the connection monitor last reported (false without one).
    bool connected = false;
    // Tells this registration from an earlier one of the same endpoint.
    uint64_t serial = 0;
    // The connection monitor's watch of the endpoint; 0: none.
    uint64_t watch = 0;
  };

  // ConnectionChanged records what the connection monitor reported about the endpoint
  // registration `serial`, if it is still registered.
  void ConnectionChanged(const std::string& driver_name, uint64_t serial, bool ready)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Sync tells on_usable_change whether `driver_name` is usable now.
  void Sync(const std::string& driver_name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // SyncHealthStream puts the driver's health stream on its newest registration, or ends it.
  void SyncHealthStream(const std::string& driver_name) ABSL_LOCKS_EXCLUDED(health_mu_, mu_);

  struct ActiveHealthStream {
    // The registration (Endpoint::serial) it streams from.
    uint64_t serial = 0;
    std::unique_ptr<HealthStream> stream;
  };

  const DriverRegistryOptions options_;
  // Orders the starts and stops of health streams, which join threads and so run without mu_;
  // a stream's callbacks never take it.
  absl::Mutex health_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // Driver name -> its health stream. Another driver registered at the same endpoint has a
  // stream of its own.
  std::map<std::string, ActiveHealthStream> health_streams_ ABSL_GUARDED_BY(health_mu_);
  bool health_stopped_ ABSL_GUARDED_BY(health_mu_) = false;
  mutable absl::Mutex mu_;
  // Driver name -> its endpoints, oldest first.
  std::map<std::string, std::vector<Endpoint>, std::less<>> drivers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_serial_ ABSL_GUARDED_BY(mu_) = 0;
  // Watches the endpoints' connections when on_usable_change is set. Last: stopped first, so
  // that no report arrives while the rest goes.
  std::unique_ptr<ConnectionMonitor> monitor_;
};

}  // namespace devmgr::dra
