// FormatGoFloat: a double as Go's strconv.FormatFloat(value, 'g', -1, 64) writes it, for the
// texts devmgr shares with Go programs: CEL's string(double), the metrics' values and bucket
// bounds.
#pragma once

#include <string>

namespace devmgr {

// FormatGoFloat: the shortest digits that read back as `value`, in Go's %g form: "123.456",
// "-0.0045", "0.30000000000000004", "1e+06", "1.5e-07", "-0", "+Inf", "-Inf", "NaN".
std::string FormatGoFloat(double value);

}  // namespace devmgr
