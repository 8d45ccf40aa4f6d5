// TopologyPolicy: the daemon's topology manager, with the kubelet's four policies
// (--topology-manager-policy): none, best-effort, restricted, single-numa-node, and its two
// scopes (--topology-manager-scope). In container scope it merges the device manager's hints
// for each container (one list per resource); in pod scope once, over the pod's hints (each
// resource's request for the whole pod), and every container gets the pod's affinity. It picks
// the best affinity as upstream's hint merger does, decides whether the pod may be admitted,
// and remembers the affinity, which the device manager reads during Allocate
// (devicemanager::TopologyAffinityStore) to pick devices on those NUMA nodes.
//
// The merge follows upstream's policy.go: a resource with no preference counts as "any node,
// preferred", one that cannot be satisfied as "any node, not preferred"; every combination of
// one hint per resource is ANDed, preferred when all its hints are and name the same nodes; a
// preferred merge beats a non-preferred one, then the narrower wins; between non-preferred
// merges, the one closest to the most nodes any resource needs at least (upstream's
// bestNonPreferredAffinityCount). With nothing better, the answer is "all nodes, not
// preferred". single-numa-node first keeps only the preferred hints of one node, and, given the
// machine's nodes, turns an answer of all of them into no affinity (upstream compares it with
// the default affinity mask). "All nodes" in the merge are the machine's nodes (upstream's
// default affinity), or the nodes the hints name when the host does not know them. With the
// policy option prefer-closest-numa-nodes (given the distances between nodes), of two affinities
// of as many nodes the one whose nodes are closer on average wins, then the lower one, except
// under single-numa-node.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "devicemanager/topology_hints.h"
#include "topologymanager/numa_nodes.h"

namespace devmgr::topologymanager {

enum class TopologyPolicyKind { kNone, kBestEffort, kRestricted, kSingleNumaNode };

// ParseTopologyPolicy reads a policy name as the kubelet's flag spells it.
absl::StatusOr<TopologyPolicyKind> ParseTopologyPolicy(absl::string_view name);

enum class TopologyScope { kContainer, kPod };

// ParseTopologyScope reads "container" or "pod", as the kubelet's flag spells them.
absl::StatusOr<TopologyScope> ParseTopologyScope(absl::string_view name);

// The merged hint for a container: the affinity and whether it is preferred. "All nodes" are
// `machine_nodes`, or when it is empty the nodes the hints name (then an empty affinity when no
// resource has topology). `closest`: the distances to prefer the closest nodes by, null for the
// narrowest (ignored with single_numa_node).
devicemanager::TopologyHint MergeTopologyHints(
    const devicemanager::TopologyHints& hints, bool single_numa_node,
    const NumaDistances* closest = nullptr,
    const devicemanager::NumaMask& machine_nodes = devicemanager::NumaMask());

class TopologyPolicy final : public devicemanager::TopologyAffinityStore {
 public:
  // `machine_nodes`: the machine's NUMA nodes, empty when the host does not know them (the
  // device manager then hints over the nodes the devices report). `closest`: the distances
  // between them, given for the policy option prefer-closest-numa-nodes.
  explicit TopologyPolicy(TopologyPolicyKind kind,
                          devicemanager::NumaMask machine_nodes = devicemanager::NumaMask(),
                          TopologyScope scope = TopologyScope::kContainer,
                          std::optional<NumaDistances> closest = std::nullopt)
      : kind_(kind), scope_(scope), machine_nodes_(machine_nodes), closest_(std::move(closest)) {}

  TopologyPolicyKind kind() const { return kind_; }
  TopologyScope scope() const { return scope_; }

  // Admit merges `hints` and remembers the affinity for each of `container_names` (none when no
  // resource has topology): in container scope the hints of one container, in pod scope the
  // pod's, with all its containers named. Refused (restricted or single-numa-node with no
  // preferred merge): upstream's TopologyAffinityError text, "Resources cannot be allocated
  // with Topology locality", as FailedPrecondition, and nothing is remembered. With policy none
  // it remembers nothing and admits.
  absl::Status Admit(const std::string& pod_uid, const std::vector<std::string>& container_names,
                     const devicemanager::TopologyHints& hints);
  // Forget drops what was remembered for a pod.
  void Forget(const std::string& pod_uid);

  std::optional<devicemanager::NumaMask> GetAffinity(
      absl::string_view pod_uid, absl::string_view container_name) const override;

 private:
  const TopologyPolicyKind kind_;
  const TopologyScope scope_;
  const devicemanager::NumaMask machine_nodes_;
  const std::optional<NumaDistances> closest_;
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, devicemanager::NumaMask> affinity_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::topologymanager
