#include "common/change_log.h"

#include <algorithm>

namespace devmgr {

void ChangeLog::Record(uint64_t revision, std::string key) {
  if (capacity_ == 0) {
    complete_from_ = revision;
    return;
  }
  if (entries_.size() == capacity_) {
    complete_from_ = entries_.front().first;
    entries_.pop_front();
  }
  entries_.emplace_back(revision, std::move(key));
}

void ChangeLog::Reset(uint64_t revision) {
  entries_.clear();
  complete_from_ = revision;
}

std::optional<std::vector<std::string>> ChangeLog::Since(uint64_t revision) const {
  if (revision < complete_from_) return std::nullopt;
  auto first = std::upper_bound(entries_.begin(), entries_.end(), revision,
                                [](uint64_t wanted, const std::pair<uint64_t, std::string>& entry) {
                                  return wanted < entry.first;
                                });
  std::vector<std::string> keys;
  for (auto it = first; it != entries_.end(); ++it) keys.push_back(it->second);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

}  // namespace devmgr
