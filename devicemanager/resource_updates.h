// Resource updates: how the device manager tells its host that the health of devices some pods
// hold has changed, so that the host refreshes those pods' status (UpdateAllocatedResourcesStatus).
// Upstream's resourceupdates.Update sent on a channel with a buffer of 100 that is never waited
// on: when the host does not keep up, newer updates are dropped (and logged) rather than
// blocking the plugin's stream. ResourceUpdateQueue is that channel: bounded, never blocking.
//
// A plain value class with no lock of its own: the manager keeps it under its mutex.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

namespace devmgr::devicemanager {

// The pods one change concerns.
struct ResourceUpdate {
  // Each pod once, in UID order.
  std::vector<std::string> pod_uids;

  bool operator==(const ResourceUpdate&) const = default;
};

// Upstream's buffer size.
inline constexpr size_t kResourceUpdatesCapacity = 100;

class ResourceUpdateQueue {
 public:
  // TryPush queues `update` unless kResourceUpdatesCapacity updates are waiting already: false
  // (and `update` is dropped) when full.
  bool TryPush(ResourceUpdate update);
  // TakeAll removes and returns every queued update, oldest first.
  std::vector<ResourceUpdate> TakeAll();

  size_t size() const { return updates_.size(); }

 private:
  std::deque<ResourceUpdate> updates_;
};

}  // namespace devmgr::devicemanager
