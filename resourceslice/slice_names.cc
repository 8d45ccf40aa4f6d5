#include "resourceslice/slice_names.h"

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace devmgr::resourceslice {

int IndexLength(int64_t num_slices) {
  // As Go's strconv.FormatInt(num_slices-1, 16): a negative number counts its sign.
  const int64_t highest = num_slices - 1;
  const int digits =
      static_cast<int>(absl::StrFormat("%x", highest < 0 ? -highest : highest).size()) +
      (highest < 0 ? 1 : 0);
  return std::max(kIndexMinLength, digits);
}

std::string EncodeIndex(int64_t index, int length) {
  return absl::StrFormat("%0*x", length, index);
}

absl::StatusOr<int64_t> DecodeIndex(absl::string_view name, int length) {
  const size_t separator = name.find('-');
  if (separator == absl::string_view::npos || separator != static_cast<size_t>(length)) {
    return absl::InvalidArgumentError("invalid index length or missing separator");
  }
  const absl::string_view prefix = name.substr(0, separator);
  const auto failed = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("failed to parse index: strconv.ParseInt: parsing \"", prefix, "\": ", why));
  };
  // Go's strconv.ParseInt(prefix, 16, 0): an optional '+' (a '-' is the separator), then hex
  // digits, within int64.
  absl::string_view digits = prefix;
  if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
  if (digits.empty()) return failed("invalid syntax");
  uint64_t value = 0;
  bool overflow = false;
  for (const char c : digits) {
    const int digit = absl::ascii_isdigit(static_cast<unsigned char>(c)) ? c - '0'
                      : c >= 'a' && c <= 'f'                             ? c - 'a' + 10
                      : c >= 'A' && c <= 'F'                             ? c - 'A' + 10
                                                                         : -1;
    if (digit < 0) return failed("invalid syntax");
    overflow = overflow || value > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) -
                                    static_cast<uint64_t>(digit)) /
                                       16;
    value = value * 16 + static_cast<uint64_t>(digit);
  }
  if (overflow) return failed("value out of range");
  return static_cast<int64_t>(value);
}

}  // namespace devmgr::resourceslice
