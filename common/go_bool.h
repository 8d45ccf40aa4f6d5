// ParseGoBool: a boolean spelled as Go's strconv.ParseBool reads it, for the flags and values
// devmgr takes as Go programs take them (feature gates, topology policy options, CEL's bool()).
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr {

// ParseGoBool: true for 1, t, T, TRUE, true and True; false for 0, f, F, FALSE, false and
// False. Anything else is InvalidArgument with Go's error text:
// `strconv.ParseBool: parsing "text": invalid syntax`.
absl::StatusOr<bool> ParseGoBool(absl::string_view text);

}  // namespace devmgr
