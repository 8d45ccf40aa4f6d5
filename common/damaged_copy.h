// Damaged copies: where a state file found unusable at a start (a checkpoint that does not
// verify, a record that does not decode, a journal with a damaged header) is kept for a human.
//
// The first copy of a file "NAME" is "NAME.corrupt", as it always was; a later damage of
// different bytes goes to "NAME.corrupt.1", then ".2", up to kDamagedCopiesKept names, so that a
// second damage does not overwrite the evidence of the first. When every name is taken the last
// one is replaced: the first copies are kept whatever happens later, and a folder never holds
// more than kDamagedCopiesKept copies of one file.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/file_store.h"

namespace devmgr {

// The suffix of the first copy; later ones add ".1", ".2", ...
inline constexpr absl::string_view kDamagedCopySuffix = ".corrupt";
inline constexpr int kDamagedCopiesKept = 10;

// DamagedCopyNames: the names the copies of `name` take, in the order they are taken.
std::vector<std::string> DamagedCopyNames(absl::string_view name);

// DamagedCopyName: the name for a new copy of `name` in a folder holding the files `taken`: the
// first of DamagedCopyNames that is not taken, else the last.
std::string DamagedCopyName(absl::string_view name, const std::vector<std::string>& taken);

// MoveDamagedAside renames the damaged file `name` of `store` to DamagedCopyName and returns
// that name.
absl::StatusOr<std::string> MoveDamagedAside(const FileStore& store, absl::string_view name);

// KeepDamagedCopy writes `bytes`, the content of the damaged file `name`, as a copy in `store`
// (a FileStore, or any store with the same Read, Write and List), unless a copy kept earlier
// holds the same bytes: a start after a crash that finds the same damaged file again adds no
// copy. Returns the name of the copy that holds them.
template <typename Store>
absl::StatusOr<std::string> KeepDamagedCopy(Store& store, absl::string_view name,
                                            absl::string_view bytes) {
  absl::StatusOr<std::vector<std::string>> taken = store.List();
  if (!taken.ok()) return taken.status();
  for (std::string& copy : DamagedCopyNames(name)) {
    if (std::find(taken->begin(), taken->end(), copy) == taken->end()) continue;
    absl::StatusOr<std::string> kept = store.Read(copy);
    if (kept.ok() && *kept == bytes) return std::move(copy);
  }
  std::string copy = DamagedCopyName(name, *taken);
  if (absl::Status written = store.Write(copy, bytes); !written.ok()) return written;
  return copy;
}

}  // namespace devmgr
