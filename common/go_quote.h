// GoQuote: a string quoted and escaped as Go's strconv.Quote (and so fmt's %q) writes it, for
// the texts devmgr shares with Go programs: klog lines, the API server's field errors.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace devmgr {

// GoQuote: `value` between double quotes, with Go's escapes for quotes, backslashes, control
// characters, bytes that are not UTF-8 and code points Go does not print.
std::string GoQuote(absl::string_view value);

}  // namespace devmgr
