// PodAdmission: what the daemon does with a whole pod, for its admin API. Admission walks the
// init containers and then the app containers in order; for each it asks the topology policy
// (when one is configured) with the device manager's hints, allocates, and finally collects
// every container's run options (calling PreStartContainer where a plugin asks for it). Only
// then is the pod written to the durable record and reported admitted. Any failure releases
// everything the pod got (durably) and forgets it: a refused pod leaves no trace.
//
// Calls for one pod UID run one at a time; calls for different pods run in parallel.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/logging.h"
#include "devicemanager/manager.h"
#include "node/pod_registry.h"
#include "podresources/watch_hub.h"
#include "topologymanager/policy.h"

namespace devmgr::node {

struct ContainerOptions {
  std::string container_name;
  devicemanager::RunContainerOptions options;
};

// Told why the daemon refused an admission, for metrics: one of kDaemonRefusalReasons. Refusals of
// the device manager's Allocate are counted by the manager itself (devicemanager::ManagerMetrics)
// and are not repeated here.
using RefusalFn = std::function<void(absl::string_view reason)>;

class PodAdmission {
 public:
  // None of the references is owned; all must outlive this object.
  PodAdmission(devicemanager::Manager& manager, PodRegistry& registry,
               topologymanager::TopologyPolicy& topology, LoggerPtr logger);

  // SetNotifier: where admitted and removed pods are announced (PodResources Watch); null for
  // none. Set before the first call.
  void SetNotifier(podresources::PodResourcesNotifier* notifier) { notifier_ = notifier; }
  // SetRefusalObserver: told the reason of every admission the daemon's own steps refused.
  // Set before the first call.
  void SetRefusalObserver(RefusalFn observer) { on_refusal_ = std::move(observer); }

  // Admit admits `pod` and answers every container's run options, init containers first. A
  // pod already admitted with the same containers gets its options again; AlreadyExists if
  // its containers differ or it was recovered from the checkpoint. Other errors: the device
  // manager's, the topology policy's, or the record's; then nothing has changed.
  absl::StatusOr<std::vector<ContainerOptions>> Admit(const devicemanager::Pod& pod);

  // Remove frees the pod's devices and forgets it. NotFound when unknown.
  absl::Status Remove(const std::string& pod_uid);

  // RunOptions: one container's run options. NotFound for an unknown pod or container.
  absl::StatusOr<devicemanager::RunContainerOptions> RunOptions(const std::string& pod_uid,
                                                                const std::string& container);

 private:
  // Holds the per-pod lock for its lifetime.
  class PodLock {
   public:
    PodLock(PodAdmission& owner, std::string uid);
    ~PodLock();
    PodLock(const PodLock&) = delete;
    PodLock& operator=(const PodLock&) = delete;

   private:
    PodAdmission& owner_;
    const std::string uid_;
  };

  // AllocateAll sets `reason` (a metric label) when one of the daemon's own steps failed, and
  // leaves it empty when the device manager refused.
  absl::StatusOr<std::vector<ContainerOptions>> AllocateAll(const devicemanager::Pod& pod,
                                                            absl::string_view& reason);
  absl::StatusOr<std::vector<ContainerOptions>> CollectOptions(const devicemanager::Pod& pod);

  devicemanager::Manager& manager_;
  PodRegistry& registry_;
  topologymanager::TopologyPolicy& topology_;
  const LoggerPtr logger_;
  podresources::PodResourcesNotifier* notifier_ = nullptr;
  RefusalFn on_refusal_;

  absl::Mutex locks_mu_;
  absl::CondVar released_;
  std::set<std::string> busy_ ABSL_GUARDED_BY(locks_mu_);
};

}  // namespace devmgr::node
