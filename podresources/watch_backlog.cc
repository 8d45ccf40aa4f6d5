#include "podresources/watch_backlog.h"

#include <utility>

namespace devmgr::podresources {
namespace {

// Coalesced: the kind a client should see for a pod whose pending change `old_kind` is replaced
// by `new_kind`; KIND_UNSPECIFIED means "nothing at all".
WatchResponse::Kind Coalesced(WatchResponse::Kind old_kind, WatchResponse::Kind new_kind) {
  if (old_kind == WatchResponse::ADDED) {
    return new_kind == WatchResponse::DELETED ? WatchResponse::KIND_UNSPECIFIED
                                              : WatchResponse::ADDED;
  }
  if (old_kind == WatchResponse::DELETED && new_kind == WatchResponse::ADDED) {
    return WatchResponse::UPDATED;
  }
  return new_kind;
}

}  // namespace

void WatchBacklog::Push(WatchEventPtr event) {
  if (event->kind() == WatchResponse::SNAPSHOT) {
    by_revision_.clear();
    revision_by_pod_.clear();
    by_revision_.emplace(event->revision(), std::move(event));
    return;
  }
  auto previous = revision_by_pod_.find(event->pod_uid());
  if (previous != revision_by_pod_.end()) {
    auto old_event = by_revision_.find(previous->second);
    const WatchResponse::Kind kind = Coalesced(old_event->second->kind(), event->kind());
    by_revision_.erase(old_event);
    revision_by_pod_.erase(previous);
    if (kind == WatchResponse::KIND_UNSPECIFIED) return;
    if (kind != event->kind()) {
      auto rewritten = std::make_shared<WatchResponse>(*event);
      rewritten->set_kind(kind);
      event = std::move(rewritten);
    }
  }
  revision_by_pod_[event->pod_uid()] = event->revision();
  by_revision_.emplace(event->revision(), std::move(event));
}

WatchEventPtr WatchBacklog::Pop() {
  if (by_revision_.empty()) return nullptr;
  auto first = by_revision_.begin();
  WatchEventPtr event = std::move(first->second);
  by_revision_.erase(first);
  if (event->kind() != WatchResponse::SNAPSHOT) revision_by_pod_.erase(event->pod_uid());
  return event;
}

}  // namespace devmgr::podresources
