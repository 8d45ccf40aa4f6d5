#include "devicemanager/checkpoint_store_impl.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace devmgr::devicemanager {

absl::StatusOr<std::string> CheckpointStoreImpl::Read(absl::string_view name) const {
  return store_.Read(name);
}

absl::Status CheckpointStoreImpl::Write(absl::string_view name, absl::string_view bytes) {
  return store_.Write(name, bytes);
}

absl::Status CheckpointStoreImpl::Rename(absl::string_view from, absl::string_view to) {
  if (!FileStore::IsValidName(from) || !FileStore::IsValidName(to)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid file name \"", from, "\" or \"", to, "\""));
  }
  std::error_code ec;
  std::filesystem::rename(store_.folder() / std::string(from), store_.folder() / std::string(to),
                          ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot rename ", from, " to ", to, " in ",
                                            store_.folder().string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> CheckpointStoreImpl::List() const { return store_.List(); }

}  // namespace devmgr::devicemanager
