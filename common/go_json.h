// Strings written the way Go's encoding/json writes them, so that the files devmgr shares with a
// kubelet (the device manager's and the DRA manager's checkpoints) are the bytes it would write.
// Not installed.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace devmgr {

// ToValidUtf8 replaces each byte that does not start a valid UTF-8 sequence with U+FFFD, as
// Go does when it writes JSON. Valid input comes back unchanged.
std::string ToValidUtf8(absl::string_view s);

// AppendGoJsonString appends `s` as a quoted JSON string with Go's escaping: <, > and & as
// \u003c, \u003e, \u0026; U+2028 and U+2029 escaped; \b \f \n \r \t short forms; other control
// bytes as \u00XX; invalid UTF-8 as \ufffd.
void AppendGoJsonString(std::string& out, absl::string_view s);

}  // namespace devmgr
