#include "tests/devicemanager/fake_checkpoint_store.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace devmgr::testing {

absl::StatusOr<std::string> FakeCheckpointStore::Read(absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = files_.find(name);
  if (it == files_.end()) return absl::NotFoundError(absl::StrCat(name, " not found"));
  return it->second;
}

absl::Status FakeCheckpointStore::Write(absl::string_view name, absl::string_view bytes) {
  absl::MutexLock lock(&mu_);
  ++writes_;
  if (!write_status_.ok() && failures_left_ != 0) {
    if (failures_left_ > 0) --failures_left_;
    return write_status_;
  }
  files_[std::string(name)] = std::string(bytes);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> FakeCheckpointStore::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, bytes] : files_) names.push_back(name);
  return names;
}

void FakeCheckpointStore::FailWrites(absl::Status status, int count) {
  absl::MutexLock lock(&mu_);
  write_status_ = std::move(status);
  failures_left_ = count;
}

int FakeCheckpointStore::writes() const {
  absl::MutexLock lock(&mu_);
  return writes_;
}

}  // namespace devmgr::testing
