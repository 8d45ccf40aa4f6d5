#include "common/feature_gate_list.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/go_bool.h"

namespace devmgr {

absl::StatusOr<std::vector<std::pair<std::string, bool>>> ParseFeatureGateList(
    absl::string_view text) {
  std::vector<std::pair<std::string, bool>> gates;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(item, absl::MaxSplits('=', 1));
    const absl::string_view name = absl::StripAsciiWhitespace(parts.first);
    if (item.find('=') == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("missing bool value for ", name));
    }
    const absl::string_view value = absl::StripAsciiWhitespace(parts.second);
    absl::StatusOr<bool> enabled = ParseGoBool(value);
    if (!enabled.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("invalid value of ", name, "=", value,
                                                     ", err: ", enabled.status().message()));
    }
    gates.emplace_back(std::string(name), *enabled);
  }
  return gates;
}

}  // namespace devmgr
