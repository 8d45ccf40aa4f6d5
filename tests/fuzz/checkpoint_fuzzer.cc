// libFuzzer target for the checkpoint reader. Any input must give a Status, never a crash; and
// whatever parses must survive Encode -> Decode unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "checkpoint/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<devmgr::checkpoint::ParsedCheckpoint> parsed = devmgr::checkpoint::Parse(bytes);
  if (!parsed.ok()) return 0;
  absl::StatusOr<devmgr::checkpoint::CheckpointData> again =
      devmgr::checkpoint::Decode(devmgr::checkpoint::Encode(parsed->data));
  if (!again.ok() || *again != parsed->data) std::abort();
  return 0;
}
