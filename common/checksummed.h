// What the checkpoint codecs (checkpoint/, dra/) share about a parsed file that carries its own
// checksum: the text of a mismatch, and the data only when the checksum holds. `Parsed` has
// stored_checksum, computed_checksum, ChecksumMatches() and data.
#pragma once

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace devmgr {

// ChecksumMismatchText: "checksum mismatch: stored S, computed C".
template <typename Parsed>
std::string ChecksumMismatchText(const Parsed& parsed) {
  return absl::StrCat("checksum mismatch: stored ", parsed.stored_checksum, ", computed ",
                      parsed.computed_checksum);
}

// VerifiedData: the parsed file's data; DataLoss "checkpoint is corrupted: checksum mismatch:
// ..." when its checksum does not hold, the parse error as it is.
template <typename Parsed>
auto VerifiedData(absl::StatusOr<Parsed> parsed) -> absl::StatusOr<decltype(parsed->data)> {
  if (!parsed.ok()) return parsed.status();
  if (!parsed->ChecksumMatches()) {
    return absl::DataLossError(
        absl::StrCat("checkpoint is corrupted: ", ChecksumMismatchText(*parsed)));
  }
  return std::move(parsed->data);
}

}  // namespace devmgr
