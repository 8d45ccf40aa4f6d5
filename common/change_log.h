// ChangeLog: which keys (pod UIDs) changed at which revision, for the last `capacity` changes,
// so that a reader who built something from the state at revision R can ask what changed since
// and redo only that. The owner numbers its changes with increasing revisions and records each
// under its own lock; the log itself is not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace devmgr {

class ChangeLog {
 public:
  explicit ChangeLog(size_t capacity) : capacity_(capacity) {}

  // Record: `key` changed at `revision`, larger than every revision recorded or reset before.
  void Record(uint64_t revision, std::string key);
  // Reset: anything may have changed at `revision`; nothing before it can be told apart.
  void Reset(uint64_t revision);
  // Since: the keys changed after `revision`, sorted and each once; nullopt when the log no
  // longer reaches back that far (or never did).
  std::optional<std::vector<std::string>> Since(uint64_t revision) const;

 private:
  size_t capacity_;
  // Every change after `complete_from_` is in entries_, oldest first.
  uint64_t complete_from_ = 0;
  std::deque<std::pair<uint64_t, std::string>> entries_;
};

}  // namespace devmgr
