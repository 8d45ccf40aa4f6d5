// DriverRegistry: the DRA drivers registered on the node and how to reach them, upstream's
// DRAPluginManager (pkg/kubelet/cm/dra/plugin) without ResourceSlice wiping. Drivers register
// through the plugin watcher (plugins_registry/, type "DRAPlugin"): the host forwards the
// watcher's three handler calls here, as node/device_plugin_handler.h does for device plugins,
// so that dra/ does not depend on pluginwatcher/.
//
// An endpoint whose driver lists a DRAResourceHealth service (v1 or v1alpha1) in its
// supported_versions gets a health stream (NodeWatchResources), reopened while the endpoint is
// registered; its reports go to the HealthSink.
//
// A driver may have several endpoints at once (a rolling update starts the new plugin before
// the old one stops); calls go to the newest connected one, else to the newest.
//
// Thread-safety: every method may be called from any thread at once; none blocks on a driver.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dra/driver_client.h"
#include "dra/health_stream.h"

namespace devmgr::dra {

// The DRAPlugin services devmgr speaks, newest first.
inline constexpr absl::string_view kSupportedServices[] = {kDraPluginServiceV1,
                                                           kDraPluginServiceV1beta1};

// ChooseService: the first service of the driver's `supported_versions`, in the driver's order,
// that devmgr speaks. Errors with upstream's texts: an empty list, or none of them.
absl::StatusOr<std::string> ChooseService(const std::vector<std::string>& supported_versions);

// HealthSink: where the health streams of the registered endpoints report, on their threads.
class HealthSink {
 public:
  virtual ~HealthSink() = default;
  virtual void HealthReported(const std::string& driver_name,
                              const healthapi::NodeWatchResourcesResponse& response) = 0;
  virtual void HealthStreamEnded(const std::string& driver_name, const HealthStreamEnd& end) = 0;
};

class DriverRegistry {
 public:
  // Calls to drivers have `call_timeout` and are told to `metrics` (not owned; may be null).
  // Health streams report to `health` (not owned; null: none are opened), reopened after
  // `health_retry_period`.
  explicit DriverRegistry(absl::Duration call_timeout = kDefaultCallTimeout,
                          ManagerMetrics* metrics = nullptr, HealthSink* health = nullptr,
                          absl::Duration health_retry_period = kHealthStreamRetryPeriod)
      : call_timeout_(call_timeout),
        metrics_(metrics),
        health_(health),
        health_retry_period_(health_retry_period) {}
  // Stops every health stream.
  ~DriverRegistry();
  DriverRegistry(const DriverRegistry&) = delete;
  DriverRegistry& operator=(const DriverRegistry&) = delete;

  // StopHealthStreams stops every health stream and opens no more: no report reaches the sink
  // after it returns. For the owner's destruction.
  void StopHealthStreams() ABSL_LOCKS_EXCLUDED(mu_);

  // ValidatePlugin checks that the driver speaks a service devmgr knows ("invalid supported
  // gRPC versions of DRA driver plugin NAME at endpoint PATH: ...").
  absl::Status ValidatePlugin(absl::string_view driver_name, absl::string_view endpoint,
                              const std::vector<std::string>& versions) const;
  // RegisterPlugin adds an endpoint of the driver, with a channel that starts connecting at
  // once. The same endpoint twice is refused ("endpoint PATH already registered for DRA driver
  // plugin NAME").
  absl::Status RegisterPlugin(absl::string_view driver_name, absl::string_view endpoint,
                              const std::vector<std::string>& versions) ABSL_LOCKS_EXCLUDED(mu_);
  // DeRegisterPlugin removes the endpoint; calls in flight on it finish. Unknown ones are
  // ignored.
  void DeRegisterPlugin(absl::string_view driver_name, absl::string_view endpoint)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Get: the endpoint calls to `driver_name` go to. Errors with upstream's texts: "DRA driver
  // name is empty", "DRA driver NAME is not registered" (FailedPrecondition: the driver may
  // still come).
  absl::StatusOr<std::shared_ptr<const DriverClient>> Get(absl::string_view driver_name) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const absl::Duration call_timeout_;
  ManagerMetrics* const metrics_;
  HealthSink* const health_;
  const absl::Duration health_retry_period_;
  mutable absl::Mutex mu_;
  // The health stream of each endpoint that has one.
  std::map<std::string, std::unique_ptr<HealthStream>, std::less<>> health_streams_
      ABSL_GUARDED_BY(mu_);
  bool health_stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Driver name -> its endpoints, oldest first.
  std::map<std::string, std::vector<std::shared_ptr<const DriverClient>>, std::less<>> drivers_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::dra
