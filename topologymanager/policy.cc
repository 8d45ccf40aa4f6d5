#include "topologymanager/policy.h"

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

// Better reports whether `candidate` beats `best` (upstream's HintMerger.compare, with the
// narrower rule for two non-preferred hints).
bool Better(const TopologyHint& candidate, const std::optional<TopologyHint>& best) {
  if (candidate.numa_affinity.empty()) return false;
  if (!best.has_value()) return true;
  if (candidate.preferred != best->preferred) return candidate.preferred;
  return candidate.numa_affinity.Count() < best->numa_affinity.Count() ||
         (candidate.numa_affinity.Count() == best->numa_affinity.Count() &&
          candidate.numa_affinity.bits() < best->numa_affinity.bits());
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

TopologyHint MergeTopologyHints(const devicemanager::TopologyHints& hints, bool single_numa_node) {
  // One list of candidates per resource, and every node any hint names ("any node").
  std::vector<std::vector<Candidate>> lists;
  NumaMask all_nodes;
  for (const auto& [resource, resource_hints] : hints) {
    if (!resource_hints.has_value()) {
      lists.push_back({Candidate{std::nullopt, true}});
      continue;
    }
    std::vector<Candidate> list;
    for (const TopologyHint& hint : *resource_hints) {
      all_nodes = NumaMask::FromBits(all_nodes.bits() | hint.numa_affinity.bits());
      if (single_numa_node && hint.numa_affinity.Count() != 1) continue;
      list.push_back({hint.numa_affinity, hint.preferred});
    }
    if (list.empty()) list.push_back({std::nullopt, false});
    lists.push_back(std::move(list));
  }
  if (all_nodes.empty()) {
    // No resource has topology: "any node", preferred unless one cannot be satisfied.
    bool preferred = true;
    for (const auto& list : lists) preferred = preferred && list.front().preferred;
    return TopologyHint{all_nodes, preferred};
  }
  const TopologyHint fallback{all_nodes, false};

  std::optional<TopologyHint> best;
  std::vector<size_t> index(lists.size(), 0);
  for (;;) {
    TopologyHint merged{all_nodes, true};
    for (size_t i = 0; i < lists.size(); ++i) {
      const Candidate& candidate = lists[i][index[i]];
      if (candidate.affinity.has_value()) {
        merged.numa_affinity =
            NumaMask::FromBits(merged.numa_affinity.bits() & candidate.affinity->bits());
      }
      merged.preferred = merged.preferred && candidate.preferred;
    }
    if (Better(merged, best)) best = merged;
    // Next combination, like an odometer.
    size_t i = 0;
    while (i < lists.size() && ++index[i] == lists[i].size()) index[i++] = 0;
    if (i == lists.size()) break;
  }
  return best.value_or(fallback);
}

absl::Status TopologyPolicy::Admit(const std::string& pod_uid, const std::string& container_name,
                                   const devicemanager::TopologyHints& hints) {
  if (kind_ == TopologyPolicyKind::kNone) return absl::OkStatus();
  const TopologyHint best = MergeTopologyHints(hints, kind_ == TopologyPolicyKind::kSingleNumaNode);
  if (kind_ != TopologyPolicyKind::kBestEffort && !best.preferred) {
    return absl::FailedPreconditionError("Resources cannot be allocated with Topology locality");
  }
  if (best.numa_affinity.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  affinity_[{pod_uid, container_name}] = best.numa_affinity;
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
