#include "common/json_depth.h"

#include <cstddef>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace devmgr {

absl::Status CheckJsonDepth(absl::string_view bytes, int max_depth) {
  return CheckJsonShape(bytes, max_depth, SIZE_MAX);
}

absl::Status CheckJsonShape(absl::string_view bytes, int max_depth, size_t max_values) {
  int depth = 0;
  size_t separators = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      // A container is a value, and its first member comes without a comma.
      if (++separators >= max_values) {
        return absl::InvalidArgumentError(
            absl::StrCat("byte ", i, ": JSON holds more than ", max_values, " values"));
      }
      if (++depth > max_depth) {
        return absl::InvalidArgumentError(
            absl::StrCat("byte ", i, ": JSON nested deeper than ", max_depth, " levels"));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && ++separators >= max_values) {
      return absl::InvalidArgumentError(
          absl::StrCat("byte ", i, ": JSON holds more than ", max_values, " values"));
    }
  }
  return absl::OkStatus();
}

}  // namespace devmgr
