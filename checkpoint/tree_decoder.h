// The general checkpoint decoder alone: the whole file parsed as a JSON tree and decoded by Go's
// rules, without the canonical reader (canonical_reader.h) that Parse tries first. Parse gives
// what this gives for every input; the codec's tests and fuzzer hold the two to that. Internal
// to checkpoint/; not installed.
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "checkpoint/checkpoint.h"

namespace devmgr::checkpoint::internal {

absl::StatusOr<ParsedCheckpoint> ParseTree(absl::string_view bytes);

}  // namespace devmgr::checkpoint::internal
