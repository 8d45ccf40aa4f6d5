#include "devicemanager/checkpoint_store_impl.h"

namespace devmgr::devicemanager {

absl::StatusOr<std::string> CheckpointStoreImpl::Read(absl::string_view name) const {
  return store_.Read(name);
}

absl::Status CheckpointStoreImpl::Write(absl::string_view name, absl::string_view bytes) {
  return store_.Write(name, bytes);
}

absl::StatusOr<std::vector<std::string>> CheckpointStoreImpl::List() const { return store_.List(); }

}  // namespace devmgr::devicemanager
