// Fuzz target for the generic device plugin's config (plugins/generic/generic_config.h), which
// an operator writes by hand: any text is refused with InvalidArgument naming what is wrong, or
// read into a config; never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "plugins/generic/generic_config.h"
#include "tests/fuzz/invariant.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using devmgr::fuzz::Invariant;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto config = devmgr::plugins::ParseGenericConfig(text);
  if (!config.ok()) {
    Invariant(config.status().code() == absl::StatusCode::kInvalidArgument,
              "a bad config is InvalidArgument");
    Invariant(!config.status().message().empty(), "a refusal says why");
  }
  return 0;
}
