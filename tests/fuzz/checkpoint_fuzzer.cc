// libFuzzer target for the checkpoint reader. Any input must give a Status, never a crash; Parse
// (the canonical reader first) must give exactly what the general decoder alone gives, and
// whatever the canonical reader reads must hash as the general decoder's reading does, whether
// or not the stored checksum matches; whatever parses must survive Encode -> Decode unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>

#include "checkpoint/canonical_reader.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/checksum.h"
#include "checkpoint/tree_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<devmgr::checkpoint::ParsedCheckpoint> parsed = devmgr::checkpoint::Parse(bytes);
  absl::StatusOr<devmgr::checkpoint::ParsedCheckpoint> tree =
      devmgr::checkpoint::internal::ParseTree(bytes);
  if (parsed.status() != tree.status()) std::abort();
  const std::optional<devmgr::checkpoint::internal::GoDecoded> canonical =
      devmgr::checkpoint::internal::ReadCanonical(bytes);
  if (canonical.has_value()) {
    if (!tree.ok()) std::abort();
    if (tree->format == devmgr::checkpoint::Format::kCurrent &&
        (tree->stored_checksum != canonical->checksum ||
         tree->computed_checksum != devmgr::checkpoint::internal::Checksum(canonical->data))) {
      std::abort();
    }
  }
  if (!parsed.ok()) return 0;
  if (parsed->data != tree->data || parsed->format != tree->format ||
      parsed->stored_checksum != tree->stored_checksum ||
      parsed->computed_checksum != tree->computed_checksum) {
    std::abort();
  }
  absl::StatusOr<devmgr::checkpoint::CheckpointData> again =
      devmgr::checkpoint::Decode(devmgr::checkpoint::Encode(parsed->data));
  if (!again.ok() || *again != parsed->data) std::abort();
  return 0;
}
