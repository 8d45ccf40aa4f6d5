#include "common/go_bool.h"

#include "absl/strings/str_cat.h"
#include "common/go_quote.h"

namespace devmgr {

absl::StatusOr<bool> ParseGoBool(absl::string_view text) {
  for (absl::string_view yes : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (text == yes) return true;
  }
  for (absl::string_view no : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (text == no) return false;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("strconv.ParseBool: parsing ", GoQuote(text), ": invalid syntax"));
}

}  // namespace devmgr
