// The index prefix of the ResourceSlice names the controller generates: slice i of a pool is
// named "<i in hex, zero-padded>-<driver>-<owner>-<suffix the API server adds>", so that the
// allocator, which sorts slices by name and takes the first fit, sees them in the driver's order.
// At least 5 hex digits, more when the pool has more slices than that counts.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr::resourceslice {

inline constexpr int kIndexMinLength = 5;

// IndexLength: the digits every slice name of a pool of `num_slices` slices uses.
int IndexLength(int64_t num_slices);

// EncodeIndex: `index` in lower-case hex, zero-padded to `length`.
std::string EncodeIndex(int64_t index, int length);

// DecodeIndex: the index a slice name starts with, which must be exactly `length` characters
// before the first '-'. InvalidArgument "invalid index length or missing separator", or "failed
// to parse index: ..." for what is not a hex number that fits.
absl::StatusOr<int64_t> DecodeIndex(absl::string_view name, int length);

}  // namespace devmgr::resourceslice
