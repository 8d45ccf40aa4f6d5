#include "devicemanager/id_set.h"

#include <algorithm>
#include <utility>

namespace devmgr::devicemanager {

IdSet::IdSet(std::vector<std::string> ids) : ids_(std::move(ids)) {
  // One pass for the usual input, already ascending without repeats.
  auto not_ascending = [](const std::string& a, const std::string& b) { return !(a < b); };
  if (std::adjacent_find(ids_.begin(), ids_.end(), not_ascending) == ids_.end()) return;
  std::sort(ids_.begin(), ids_.end());
  ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
}

bool IdSet::contains(absl::string_view id) const {
  auto it = std::lower_bound(ids_.begin(), ids_.end(), id,
                             [](const std::string& a, absl::string_view b) { return a < b; });
  return it != ids_.end() && *it == id;
}

void IdSet::EraseAll(const std::set<std::string>& ids) {
  if (ids.empty()) return;
  auto next = ids.begin();
  size_t kept = 0;
  for (size_t i = 0; i < ids_.size(); ++i) {
    while (next != ids.end() && *next < ids_[i]) ++next;
    if (next != ids.end() && *next == ids_[i]) continue;
    if (kept != i) ids_[kept] = std::move(ids_[i]);
    ++kept;
  }
  ids_.resize(kept);
}

}  // namespace devmgr::devicemanager
