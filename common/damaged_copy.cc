#include "common/damaged_copy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace devmgr {

std::vector<std::string> DamagedCopyNames(absl::string_view name) {
  std::vector<std::string> names;
  names.reserve(kDamagedCopiesKept);
  names.push_back(absl::StrCat(name, kDamagedCopySuffix));
  for (int i = 1; i < kDamagedCopiesKept; ++i) {
    names.push_back(absl::StrCat(name, kDamagedCopySuffix, ".", i));
  }
  return names;
}

std::string DamagedCopyName(absl::string_view name, const std::vector<std::string>& taken) {
  std::vector<std::string> names = DamagedCopyNames(name);
  for (std::string& copy : names) {
    if (std::find(taken.begin(), taken.end(), copy) == taken.end()) return std::move(copy);
  }
  return std::move(names.back());
}

absl::StatusOr<std::string> MoveDamagedAside(const FileStore& store, absl::string_view name) {
  absl::StatusOr<std::vector<std::string>> taken = store.List();
  if (!taken.ok()) return taken.status();
  std::string aside = DamagedCopyName(name, *taken);
  if (absl::Status renamed = store.Rename(name, aside); !renamed.ok()) return renamed;
  return aside;
}

}  // namespace devmgr
