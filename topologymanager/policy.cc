#include "topologymanager/policy.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace devmgr::topologymanager {
namespace {

using devicemanager::NumaMask;
using devicemanager::TopologyHint;

// A hint whose affinity is "any node" (upstream's nil affinity) until the merge fills in the
// machine's nodes.
struct Candidate {
  std::optional<NumaMask> affinity;
  bool preferred = false;
};

// Narrower: upstream's IsNarrowerThan: fewer nodes, or as many and the lower mask.
bool Narrower(const NumaMask& a, const NumaMask& b) {
  return a.Count() < b.Count() || (a.Count() == b.Count() && a.bits() < b.bits());
}

// Fitter: upstream's compareNUMAAffinityMasks, whether `a` beats `b`: narrower, or with
// `closest` (prefer-closest-numa-nodes), of as many nodes and closer on average, or as close
// and the lower mask.
bool Fitter(const NumaMask& a, const NumaMask& b, const NumaDistances* closest) {
  if (closest == nullptr || a.Count() != b.Count()) return Narrower(a, b);
  const double from_a = closest->AverageFor(a);
  const double from_b = closest->AverageFor(b);
  if (from_a != from_b) return from_a < from_b;
  return a.bits() < b.bits();
}

// Better reports whether `candidate` replaces `best` (upstream's HintMerger.compare, its masks
// compared by Fitter). Between two non-preferred hints it aims at `target` nodes (upstream's
// bestNonPreferredAffinityCount): from above, the fitter wins; at the target, only another
// hint at the target and fitter; from below, a hint closer to the target without passing it.
bool Better(const TopologyHint& candidate, const std::optional<TopologyHint>& best, int target,
            const NumaDistances* closest) {
  if (candidate.numa_affinity.empty()) return false;
  if (!best.has_value()) return true;
  if (candidate.preferred != best->preferred) return candidate.preferred;
  const bool fitter = Fitter(candidate.numa_affinity, best->numa_affinity, closest);
  if (candidate.preferred) return fitter;
  const int current = best->numa_affinity.Count();
  const int count = candidate.numa_affinity.Count();
  if (current > target) return fitter;
  if (current == target) return count == target && fitter;
  if (count > target) return false;
  if (count == target) return true;
  if (count != current) return count > current;
  return fitter;
}

// The most nodes any resource needs at least: the largest of each list's narrowest affinity
// (upstream's maxOfMinAffinityCounts); lists without an affinity count for nothing.
int MaxOfMinAffinityCounts(const std::vector<std::vector<Candidate>>& lists) {
  int most = 0;
  for (const std::vector<Candidate>& list : lists) {
    const Candidate* narrowest = nullptr;
    for (const Candidate& candidate : list) {
      if (!candidate.affinity.has_value()) continue;
      if (narrowest == nullptr || Narrower(*candidate.affinity, *narrowest->affinity)) {
        narrowest = &candidate;
      }
    }
    if (narrowest != nullptr) most = std::max(most, narrowest->affinity->Count());
  }
  return most;
}

}  // namespace

absl::StatusOr<TopologyPolicyKind> ParseTopologyPolicy(absl::string_view name) {
  if (name == "none") return TopologyPolicyKind::kNone;
  if (name == "best-effort") return TopologyPolicyKind::kBestEffort;
  if (name == "restricted") return TopologyPolicyKind::kRestricted;
  if (name == "single-numa-node") return TopologyPolicyKind::kSingleNumaNode;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown topology policy \"", std::string(name),
                   "\": want none, best-effort, restricted or single-numa-node"));
}

absl::StatusOr<TopologyScope> ParseTopologyScope(absl::string_view name) {
  if (name == "container") return TopologyScope::kContainer;
  if (name == "pod") return TopologyScope::kPod;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown topology scope \"", std::string(name), "\": want container or pod"));
}

TopologyHint MergeTopologyHints(const devicemanager::TopologyHints& hints, bool single_numa_node,
                                const NumaDistances* closest, const NumaMask& machine_nodes) {
  // One list of candidates per resource, and "any node": the machine's nodes, else every node
  // any hint names.
  std::vector<std::vector<Candidate>> lists;
  NumaMask all_nodes = machine_nodes;
  for (const auto& [resource, resource_hints] : hints) {
    if (!resource_hints.has_value()) {
      lists.push_back({Candidate{std::nullopt, true}});
      continue;
    }
    std::vector<Candidate> list;
    for (const TopologyHint& hint : *resource_hints) {
      if (machine_nodes.empty()) {
        all_nodes = NumaMask::FromBits(all_nodes.bits() | hint.numa_affinity.bits());
      }
      if (single_numa_node && (hint.numa_affinity.Count() != 1 || !hint.preferred)) continue;
      list.push_back({hint.numa_affinity, hint.preferred});
    }
    if (list.empty()) list.push_back({std::nullopt, false});
    lists.push_back(std::move(list));
  }
  if (all_nodes.empty()) {
    // No resource has topology, on nodes not known: "any node", preferred unless one cannot be
    // satisfied.
    bool preferred = true;
    for (const auto& list : lists) preferred = preferred && list.front().preferred;
    return TopologyHint{all_nodes, preferred};
  }
  const TopologyHint fallback{all_nodes, false};
  const int target = MaxOfMinAffinityCounts(lists);

  std::optional<TopologyHint> best;
  std::vector<size_t> index(lists.size(), 0);
  for (;;) {
    // Upstream's mergePermutation: the AND of the affinities, preferred when every hint is and
    // every affinity is the same (a resource that needs two nodes and one that fits on one are
    // not aligned by the one node they share).
    TopologyHint merged{all_nodes, true};
    std::optional<NumaMask> first;
    for (size_t i = 0; i < lists.size(); ++i) {
      const Candidate& candidate = lists[i][index[i]];
      if (candidate.affinity.has_value()) {
        merged.numa_affinity =
            NumaMask::FromBits(merged.numa_affinity.bits() & candidate.affinity->bits());
        if (!first.has_value()) first = candidate.affinity;
        if (*candidate.affinity != *first) merged.preferred = false;
      }
      merged.preferred = merged.preferred && candidate.preferred;
    }
    if (Better(merged, best, target, single_numa_node ? nullptr : closest)) best = merged;
    // Next combination, like an odometer.
    size_t i = 0;
    while (i < lists.size() && ++index[i] == lists[i].size()) index[i++] = 0;
    if (i == lists.size()) break;
  }
  return best.value_or(fallback);
}

absl::Status TopologyPolicy::Admit(const std::string& pod_uid,
                                   const std::vector<std::string>& container_names,
                                   const devicemanager::TopologyHints& hints) {
  if (kind_ == TopologyPolicyKind::kNone) return absl::OkStatus();
  const bool single_numa_node = kind_ == TopologyPolicyKind::kSingleNumaNode;
  TopologyHint best = MergeTopologyHints(
      hints, single_numa_node, closest_.has_value() ? &*closest_ : nullptr, machine_nodes_);
  if (kind_ != TopologyPolicyKind::kBestEffort && !best.preferred) {
    return absl::FailedPreconditionError("Resources cannot be allocated with Topology locality");
  }
  // Every node of the machine is no narrower than no affinity at all: the device manager then
  // treats every device alike (on a machine of one node, the devices without topology too).
  if (single_numa_node && !machine_nodes_.empty() && best.numa_affinity == machine_nodes_) {
    best.numa_affinity = NumaMask();
  }
  if (best.numa_affinity.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  for (const std::string& name : container_names) affinity_[{pod_uid, name}] = best.numa_affinity;
  return absl::OkStatus();
}

void TopologyPolicy::Forget(const std::string& pod_uid) {
  absl::MutexLock lock(&mu_);
  auto it = affinity_.lower_bound(std::pair<std::string, std::string>(pod_uid, ""));
  while (it != affinity_.end() && it->first.first == pod_uid) it = affinity_.erase(it);
}

std::optional<NumaMask> TopologyPolicy::GetAffinity(absl::string_view pod_uid,
                                                    absl::string_view container_name) const {
  absl::MutexLock lock(&mu_);
  auto it = affinity_.find(std::pair<std::string, std::string>(pod_uid, container_name));
  if (it == affinity_.end()) return std::nullopt;
  return it->second;
}

}  // namespace devmgr::topologymanager
