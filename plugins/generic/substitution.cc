#include "plugins/generic/substitution.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace devmgr::plugins {

absl::Status ValidateTemplate(absl::string_view text) {
  for (size_t open = text.find('{'); open != absl::string_view::npos;
       open = text.find('{', open + 1)) {
    const size_t close = text.find('}', open);
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("\"{\" without \"}\" in \"", text, "\""));
    }
    const absl::string_view name = text.substr(open, close - open + 1);
    if (name != "{id}" && name != "{index}" && name != "{path}") {
      return absl::InvalidArgumentError(absl::StrCat("unknown substitution ", name, " in \"", text,
                                                     "\"; want {id}, {index} or {path}"));
    }
  }
  return absl::OkStatus();
}

bool HasSubstitution(absl::string_view text) { return text.find('{') != absl::string_view::npos; }

std::string Expand(absl::string_view text, const DeviceValues& values) {
  return absl::StrReplaceAll(
      text, {{"{id}", values.id}, {"{index}", values.index}, {"{path}", values.path}});
}

}  // namespace devmgr::plugins
