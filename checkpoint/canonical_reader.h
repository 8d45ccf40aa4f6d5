// The checkpoint's common case read in one pass: the file exactly as Go's encoding/json writes
// the kubelet's struct (and as Encode writes it), decoded straight into the Go-shaped values
// without building a JSON tree first.
//
// Anything else, however valid, is left to the general decoder in checkpoint.cc, which alone
// knows Go's rules for the rest (case-insensitive keys, repeated members, nulls where Go never
// writes them, escapes, the pre-1.20 layout) and alone words the errors. So the reader accepts
// only input on which those rules agree with a plain reading: the known keys as Go spells
// them, each once; strings of printable ASCII with no escape; NUMA node keys and the checksum
// as Go formats integers. Internal to checkpoint/; not installed.
#pragma once

#include <optional>

#include "absl/strings/string_view.h"
#include "checkpoint/go_value.h"

namespace devmgr::checkpoint::internal {

// The file decoded in the current (1.20+) layout, or std::nullopt when it is not in the form
// above. Where it gives a value, the general decoder gives the same one.
std::optional<GoDecoded> ReadCanonical(absl::string_view bytes);

}  // namespace devmgr::checkpoint::internal
