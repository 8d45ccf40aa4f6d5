// IdSet: device IDs of one resource kept as one sorted array, for the sets admission draws from
// a resource's devices (its free devices, their NUMA split), which can hold 100,000 IDs: made
// in one allocation, searched by bisection, and walked in ID order beside other ID-ordered
// state. Not for sets that change one ID at a time. A value type; not thread-safe.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace devmgr::devicemanager {

class IdSet {
 public:
  using value_type = std::string;
  using iterator = std::vector<std::string>::const_iterator;
  using const_iterator = std::vector<std::string>::const_iterator;

  IdSet() = default;
  // `ids` in any order; a repeated ID counts once. Already sorted input is only checked.
  explicit IdSet(std::vector<std::string> ids);

  bool contains(absl::string_view id) const;
  size_t size() const { return ids_.size(); }
  bool empty() const { return ids_.empty(); }
  const_iterator begin() const { return ids_.begin(); }
  const_iterator end() const { return ids_.end(); }
  // The IDs, ascending.
  const std::vector<std::string>& ids() const { return ids_; }

  // EraseAll removes every ID of `ids` (one walk beside it).
  void EraseAll(const std::set<std::string>& ids);

  bool operator==(const IdSet&) const = default;

 private:
  std::vector<std::string> ids_;
};

}  // namespace devmgr::devicemanager
