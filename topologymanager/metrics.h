// TopologyMetrics: what the daemon's topology manager tells a host that exports metrics, where
// upstream's kubelet updates the same ones (pkg/kubelet/cm/topologymanager):
//   - each pod's admission, counted and timed from its first container's hints to its last
//     container's devices, and whether it failed (a refused alignment or a failed allocation,
//     under a policy other than none):
//     kubelet_topology_manager_admission_{requests_total,errors_total,duration_ms};
//   - under a policy that guarantees alignment (single-numa-node), each container (container
//     scope) or pod (pod scope) aligned, or refused for want of an alignment:
//     kubelet_container_aligned_compute_resources_{count,failure_count}{scope,boundary="numa_node"}.
// Called from admission threads, concurrently; implementations must be thread-safe and must not
// block.
#pragma once

#include "absl/time/time.h"
#include "topologymanager/policy.h"

namespace devmgr::topologymanager {

class TopologyMetrics {
 public:
  virtual ~TopologyMetrics() = default;
  virtual void AdmissionDone(bool failed, absl::Duration duration) = 0;
  virtual void AlignmentDone(TopologyScope scope, bool aligned) = 0;
};

}  // namespace devmgr::topologymanager
