#include "podresources/list_cache.h"

namespace devmgr::podresources {

std::optional<ListCache::Key> ListCache::KeyOf(const Providers& providers) {
  if (providers.cpus != nullptr || providers.memory != nullptr ||
      providers.dynamic_resources != nullptr) {
    return std::nullopt;
  }
  const std::optional<uint64_t> pods = providers.pods->ActivePodsRevision();
  const std::optional<uint64_t> devices = providers.devices->AllocationsRevision();
  if (!pods.has_value() || !devices.has_value()) return std::nullopt;
  return Key{*pods, *devices};
}

std::optional<grpc::ByteBuffer> ListCache::Find(const Key& key) const {
  absl::MutexLock lock(&mu_);
  if (key_ != key) return std::nullopt;
  return answer_;
}

void ListCache::Keep(const Key& key, const grpc::ByteBuffer& answer) {
  absl::MutexLock lock(&mu_);
  key_ = key;
  answer_ = answer;
}

}  // namespace devmgr::podresources
