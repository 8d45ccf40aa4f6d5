#include "topologymanager/policy_options.h"

#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace devmgr::topologymanager {
namespace {

constexpr absl::string_view kPreferClosest = "prefer-closest-numa-nodes";
constexpr absl::string_view kMaxAllowable = "max-allowable-numa-nodes";

// Go's strconv.ParseBool, which the kubelet reads the option with.
bool ParseGoBool(absl::string_view text, bool& value) {
  for (absl::string_view yes : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (text == yes) {
      value = true;
      return true;
    }
  }
  for (absl::string_view no : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (text == no) {
      value = false;
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<TopologyPolicyOptions> ParseTopologyPolicyOptions(absl::string_view text) {
  TopologyPolicyOptions options;
  for (absl::string_view pair : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    const std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(pair, absl::MaxSplits('=', 1));
    if (pair.find('=') == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed pair \"", pair, "\", expect string=string"));
    }
    const absl::string_view name = absl::StripAsciiWhitespace(parts.first);
    const absl::string_view value = absl::StripAsciiWhitespace(parts.second);
    if (name == kPreferClosest) {
      if (!ParseGoBool(value, options.prefer_closest_numa_nodes)) {
        return absl::InvalidArgumentError(
            absl::StrCat("bad value for option \"", name, "\": \"", value, "\" is not a boolean"));
      }
    } else if (name == kMaxAllowable) {
      int nodes = 0;
      if (!absl::SimpleAtoi(value, &nodes)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "unable to convert policy option to integer \"", name, "\": \"", value, "\""));
      }
      if (nodes < static_cast<int>(devicemanager::kMaxNumaNodesForHints)) {
        return absl::InvalidArgumentError(absl::StrCat("the minimum value of \"", name,
                                                       "\" should not be less than ",
                                                       devicemanager::kMaxNumaNodesForHints));
      }
      options.max_allowable_numa_nodes = static_cast<size_t>(nodes);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown Topology Manager Policy option: \"", name, "\""));
    }
  }
  return options;
}

}  // namespace devmgr::topologymanager
