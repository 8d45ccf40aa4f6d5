#include "devicemanager/resource_updates.h"

#include <iterator>
#include <utility>

namespace devmgr::devicemanager {

bool ResourceUpdateQueue::TryPush(ResourceUpdate update) {
  if (updates_.size() >= kResourceUpdatesCapacity) return false;
  updates_.push_back(std::move(update));
  return true;
}

std::vector<ResourceUpdate> ResourceUpdateQueue::TakeAll() {
  std::vector<ResourceUpdate> taken(std::make_move_iterator(updates_.begin()),
                                    std::make_move_iterator(updates_.end()));
  updates_.clear();
  return taken;
}

}  // namespace devmgr::devicemanager
