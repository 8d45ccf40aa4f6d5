#include "resourceslice/memory_store.h"

#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace devmgr::resourceslice {
namespace {

std::string NextVersion(const std::string& version) {
  int64_t number = 0;
  if (!absl::SimpleAtoi(version, &number)) number = 0;
  return absl::StrCat(number + 1);
}

}  // namespace

absl::StatusOr<std::vector<kubeapi::ResourceSlice>> MemoryStore::List(const SliceFilter& filter) {
  absl::MutexLock lock(&mu_);
  std::vector<kubeapi::ResourceSlice> out;
  for (const auto& [name, slice] : slices_) {
    if (filter.Matches(slice)) out.push_back(slice);
  }
  return out;
}

absl::StatusOr<kubeapi::ResourceSlice> MemoryStore::Create(const kubeapi::ResourceSlice& slice) {
  kubeapi::ResourceSlice stored = slice;
  if (on_write_) on_write_(stored);
  absl::ReleasableMutexLock lock(&mu_);
  const int64_t number = created_++;
  if (stored.metadata.name.empty()) {
    if (stored.metadata.generate_name.empty()) {
      return absl::InvalidArgumentError("metadata.name or metadata.generateName is required");
    }
    stored.metadata.name = absl::StrCat(stored.metadata.generate_name, number);
  }
  if (slices_.contains(stored.metadata.name)) {
    return absl::AlreadyExistsError(absl::StrCat("resourceslices.resource.k8s.io \"",
                                                 stored.metadata.name, "\" already exists"));
  }
  stored.metadata.uid = absl::StrCat("memory-store-uid-", number);
  stored.metadata.resource_version = NextVersion("");
  slices_[stored.metadata.name] = stored;
  lock.Release();
  Notify({{nullptr, &stored}});
  return stored;
}

absl::StatusOr<kubeapi::ResourceSlice> MemoryStore::Update(const kubeapi::ResourceSlice& slice) {
  kubeapi::ResourceSlice stored = slice;
  if (on_write_) on_write_(stored);
  absl::ReleasableMutexLock lock(&mu_);
  auto it = slices_.find(stored.metadata.name);
  if (it == slices_.end()) {
    return absl::NotFoundError(
        absl::StrCat("resourceslices.resource.k8s.io \"", stored.metadata.name, "\" not found"));
  }
  if (!stored.metadata.resource_version.empty() &&
      stored.metadata.resource_version != it->second.metadata.resource_version) {
    return absl::AbortedError(absl::StrCat(
        "Operation cannot be fulfilled on resourceslices.resource.k8s.io \"", stored.metadata.name,
        "\": the object has been modified; please apply your changes to the latest version and "
        "try again"));
  }
  stored.metadata.uid = it->second.metadata.uid;
  stored.metadata.resource_version = NextVersion(it->second.metadata.resource_version);
  const kubeapi::ResourceSlice before = std::exchange(it->second, stored);
  lock.Release();
  Notify({{&before, &stored}});
  return stored;
}

absl::Status MemoryStore::Delete(const std::string& name, const std::string& uid,
                                 const std::string& resource_version) {
  absl::ReleasableMutexLock lock(&mu_);
  auto it = slices_.find(name);
  if (it == slices_.end()) {
    return absl::NotFoundError(
        absl::StrCat("resourceslices.resource.k8s.io \"", name, "\" not found"));
  }
  const kubeapi::ObjectMeta& meta = it->second.metadata;
  const auto failed = [&](absl::string_view field, const std::string& wanted,
                          const std::string& stored) {
    return absl::AbortedError(
        absl::StrCat("Operation cannot be fulfilled on resourceslices.resource.k8s.io \"", name,
                     "\": Precondition failed: ", field, " in precondition: ", wanted, ", ", field,
                     " in object meta: ", stored));
  };
  if (!uid.empty() && uid != meta.uid) return failed("UID", uid, meta.uid);
  if (!resource_version.empty() && resource_version != meta.resource_version) {
    return failed("ResourceVersion", resource_version, meta.resource_version);
  }
  const kubeapi::ResourceSlice gone = std::move(it->second);
  slices_.erase(it);
  lock.Release();
  Notify({{&gone, nullptr}});
  return absl::OkStatus();
}

absl::Status MemoryStore::DeleteCollection(const SliceFilter& filter) {
  std::vector<kubeapi::ResourceSlice> gone;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = slices_.begin(); it != slices_.end();) {
      if (!filter.Matches(it->second)) {
        ++it;
        continue;
      }
      gone.push_back(std::move(it->second));
      it = slices_.erase(it);
    }
  }
  std::vector<Change> changed;
  for (const kubeapi::ResourceSlice& slice : gone) changed.emplace_back(&slice, nullptr);
  Notify(changed);
  return absl::OkStatus();
}

absl::StatusOr<std::string> MemoryStore::NodeUid(const std::string& name) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) {
    return absl::NotFoundError(absl::StrCat("nodes \"", name, "\" not found"));
  }
  return it->second;
}

void MemoryStore::Put(const kubeapi::ResourceSlice& slice) {
  std::optional<kubeapi::ResourceSlice> before;
  {
    absl::MutexLock lock(&mu_);
    auto [it, added] = slices_.try_emplace(slice.metadata.name, slice);
    if (!added) before = std::exchange(it->second, slice);
  }
  Notify({{before.has_value() ? &*before : nullptr, &slice}});
}

// Subscription ends its watcher when destroyed, after any call in progress.
class MemoryStore::Subscription final : public SliceWatch {
 public:
  Subscription(MemoryStore& store, int64_t id) : store_(store), id_(id) {}
  ~Subscription() override {
    absl::MutexLock lock(&store_.watchers_mu_);
    store_.watchers_.erase(id_);
  }
  // No copy: the store itself is in memory and as quick to read.
  std::optional<CachedSlices> Cached(const SliceFilter& /*filter*/) const override {
    return std::nullopt;
  }
  bool Synced() const override { return true; }

 private:
  MemoryStore& store_;
  const int64_t id_;
};

std::unique_ptr<SliceWatch> MemoryStore::Watch(const SliceFilter& filter,
                                               SliceChangeHandler on_change) {
  absl::MutexLock lock(&watchers_mu_);
  const int64_t id = next_watcher_++;
  const Watcher& watcher =
      watchers_.emplace(id, Watcher{filter, std::move(on_change)}).first->second;
  // Reported under watchers_mu_: the changes writers make meanwhile come after, never before.
  const absl::StatusOr<std::vector<kubeapi::ResourceSlice>> existing = List(filter);
  for (const kubeapi::ResourceSlice& slice : *existing) watcher.on_change(nullptr, &slice);
  return std::make_unique<Subscription>(*this, id);
}

void MemoryStore::Notify(const std::vector<Change>& changed) {
  absl::MutexLock lock(&watchers_mu_);
  for (const auto& [id, watcher] : watchers_) {
    for (const auto& [before, after] : changed) {
      const kubeapi::ResourceSlice* was =
          before != nullptr && watcher.filter.Matches(*before) ? before : nullptr;
      const kubeapi::ResourceSlice* is =
          after != nullptr && watcher.filter.Matches(*after) ? after : nullptr;
      if (was != nullptr || is != nullptr) watcher.on_change(was, is);
    }
  }
}

void MemoryStore::SetNode(const std::string& name, const std::string& uid) {
  absl::MutexLock lock(&mu_);
  nodes_[name] = uid;
}

}  // namespace devmgr::resourceslice
