// Fuzz target for the reader of dra_manager_state (dra/checkpoint.h), a file the node shares with
// a kubelet and that `devmgr dra checkpoint` reads wherever it comes from: any bytes are refused
// with InvalidArgument or parsed; Decode accepts exactly the parsed files whose checksum matches
// (DataLoss otherwise); what is parsed, written again, is read back with a valid checksum, and
// writing is a fixpoint after one round.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "dra/checkpoint.h"
#include "tests/fuzz/invariant.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using devmgr::fuzz::Invariant;
  namespace dra = devmgr::dra;
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<dra::ParsedCheckpoint> parsed = dra::Parse(bytes);
  const absl::StatusOr<dra::CheckpointData> decoded = dra::Decode(bytes);
  if (!parsed.ok()) {
    Invariant(parsed.status().code() == absl::StatusCode::kInvalidArgument,
              "a file that is not a checkpoint is InvalidArgument");
    Invariant(!decoded.ok(), "Decode refuses what Parse refuses");
    return 0;
  }
  Invariant(decoded.ok() == parsed->ChecksumMatches(),
            "Decode accepts a parsed file exactly when its checksum matches");
  if (!decoded.ok()) {
    Invariant(decoded.status().code() == absl::StatusCode::kDataLoss,
              "a checksum mismatch is DataLoss");
  }
  const dra::Layout layout = parsed->layout.value_or(dra::Layout::kShareId);
  const std::string written = dra::Encode(parsed->data, layout);
  const absl::StatusOr<dra::CheckpointData> again = dra::Decode(written);
  Invariant(again.ok(), "what is written reads back with a valid checksum");
  Invariant(dra::Encode(*again, layout) == written, "writing is a fixpoint after one round");
  return 0;
}
