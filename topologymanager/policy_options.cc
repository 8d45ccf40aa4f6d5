#include "topologymanager/policy_options.h"

#include <cstdint>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/go_bool.h"
#include "common/go_quote.h"

namespace devmgr::topologymanager {
namespace {

constexpr absl::string_view kPreferClosest = "prefer-closest-numa-nodes";
constexpr absl::string_view kMaxAllowable = "max-allowable-numa-nodes";

// Go's strconv.Atoi on a 64-bit machine: an optional sign, then decimal digits; its error
// otherwise.
absl::StatusOr<int64_t> ParseGoInt(absl::string_view text) {
  absl::string_view digits = text;
  if (!digits.empty() && (digits.front() == '+' || digits.front() == '-')) digits.remove_prefix(1);
  const bool syntax =
      !digits.empty() && absl::c_all_of(digits, [](char c) { return absl::ascii_isdigit(c); });
  int64_t value = 0;
  if (syntax && absl::SimpleAtoi(text, &value)) return value;
  return absl::InvalidArgumentError(absl::StrCat("strconv.Atoi: parsing ", GoQuote(text), ": ",
                                                 syntax ? "value out of range" : "invalid syntax"));
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ParseOptionPairs(
    const std::vector<std::string>& values) {
  std::map<std::string, std::string> pairs;
  for (const std::string& value : values) {
    for (absl::string_view part : absl::StrSplit(value, ',', absl::SkipEmpty())) {
      const size_t equals = part.find('=');
      if (equals == absl::string_view::npos) {
        return absl::InvalidArgumentError("malformed pair, expect string=string");
      }
      pairs[std::string(absl::StripAsciiWhitespace(part.substr(0, equals)))] =
          std::string(absl::StripAsciiWhitespace(part.substr(equals + 1)));
    }
  }
  return pairs;
}

absl::StatusOr<TopologyPolicyOptions> NewTopologyPolicyOptions(
    const std::map<std::string, std::string>& pairs) {
  TopologyPolicyOptions options;
  for (const auto& [name, value] : pairs) {
    if (name == kPreferClosest) {
      absl::StatusOr<bool> prefer = ParseGoBool(value);
      if (!prefer.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("bad value for option ", GoQuote(name), ": ", prefer.status().message()));
      }
      options.prefer_closest_numa_nodes = *prefer;
    } else if (name == kMaxAllowable) {
      absl::StatusOr<int64_t> nodes = ParseGoInt(value);
      if (!nodes.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("unable to convert policy option to integer ", GoQuote(name), ": ",
                         nodes.status().message()));
      }
      if (*nodes < static_cast<int64_t>(devicemanager::kMaxNumaNodesForHints)) {
        return absl::InvalidArgumentError(absl::StrCat("the minimum value of ", GoQuote(name),
                                                       " should not be less than ",
                                                       devicemanager::kMaxNumaNodesForHints));
      }
      options.max_allowable_numa_nodes = static_cast<size_t>(*nodes);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown Topology Manager Policy option: ", GoQuote(name)));
    }
  }
  return options;
}

}  // namespace devmgr::topologymanager
