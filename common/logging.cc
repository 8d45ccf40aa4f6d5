#include "common/logging.h"

#include "absl/strings/escaping.h"

namespace devmgr::log_internal {

void AppendValue(std::string& out, absl::string_view value) {
  absl::StrAppend(&out, "\"", absl::Utf8SafeCHexEscape(value), "\"");
}

void AppendValue(std::string& out, const std::vector<std::string>& values) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    AppendValue(out, absl::string_view(values[i]));
  }
  out += ']';
}

void AppendValue(std::string& out, const absl::Status& status) {
  AppendValue(out, absl::string_view(status.ToString()));
}

}  // namespace devmgr::log_internal
