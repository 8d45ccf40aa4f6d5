// DriverRegistry: the DRA drivers registered on the node and how to reach them, upstream's
// DRAPluginManager (pkg/kubelet/cm/dra/plugin) without ResourceSlice wiping. Drivers register
// through the plugin watcher (plugins_registry/, type "DRAPlugin"): the host forwards the
// watcher's three handler calls here, as node/device_plugin_handler.h does for device plugins,
// so that dra/ does not depend on pluginwatcher/.
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

namespace devmgr::dra {

// The DRAPlugin services devmgr speaks, newest first.
inline constexpr absl::string_view kSupportedServices[] = {kDraPluginServiceV1,
                                                           kDraPluginServiceV1beta1};

// ChooseService: the first service of the driver's `supported_versions`, in the driver's order,
// that devmgr speaks. Errors with upstream's texts: an empty list, or none of them.
absl::StatusOr<std::string> ChooseService(const std::vector<std::string>& supported_versions);

class DriverRegistry {
 public:
  // Calls to drivers have `call_timeout` and are told to `metrics` (not owned; may be null).
  explicit DriverRegistry(absl::Duration call_timeout = kDefaultCallTimeout,
                          ManagerMetrics* metrics = nullptr)
      : call_timeout_(call_timeout), metrics_(metrics) {}

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
  mutable absl::Mutex mu_;
  // Driver name -> its endpoints, oldest first.
  std::map<std::string, std::vector<std::shared_ptr<const DriverClient>>, std::less<>> drivers_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::dra
