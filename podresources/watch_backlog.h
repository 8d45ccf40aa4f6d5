// WatchBacklog: the events a Watch stream has not yet written, and the policy that keeps a slow
// consumer from growing memory without bound.
//
// Policy: (1) coalesce: at most one pending event per pod; a newer change of a pod replaces its
// pending one (ADDED then UPDATED stays ADDED with the newer state; ADDED then DELETED drops
// both, since the client never saw the pod; UPDATED then DELETED is DELETED; DELETED then ADDED
// is UPDATED). Events still leave in increasing revision order; revisions of coalesced changes
// are skipped. (2) bound: if more than `max_pending` pods have pending changes, the stream is
// over its budget and the owner ends it with RESOURCE_EXHAUSTED; the client resumes by revision
// and gets the missed history or, if that history is gone or touches more than `max_pending`
// pods, a fresh snapshot. Memory per stream is therefore bounded by
// `max_pending` shared event pointers.
//
// A plain value: not thread-safe (the stream's mutex guards it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "devmgr/podresources/v1/api.pb.h"

namespace devmgr::podresources {

using WatchResponse = ::devmgr::podresources::v1::WatchResponse;
// Events are immutable once published and shared by every stream and the history.
using WatchEventPtr = std::shared_ptr<const WatchResponse>;

class WatchBacklog {
 public:
  explicit WatchBacklog(size_t max_pending) : max_pending_(max_pending) {}

  // Push adds `event`. A SNAPSHOT replaces everything pending.
  void Push(WatchEventPtr event);
  // Pop removes and returns the pending event with the lowest revision; null if none.
  WatchEventPtr Pop();

  // Clear drops everything pending.
  void Clear() {
    by_revision_.clear();
    revision_by_pod_.clear();
  }

  bool empty() const { return by_revision_.empty(); }
  size_t size() const { return by_revision_.size(); }
  // OverBudget: more pods have pending changes than the stream may hold.
  bool OverBudget() const { return by_revision_.size() > max_pending_; }

 private:
  const size_t max_pending_;
  std::map<uint64_t, WatchEventPtr> by_revision_;
  std::unordered_map<std::string, uint64_t> revision_by_pod_;
};

}  // namespace devmgr::podresources
