#include "kubeapi/semver.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace devmgr::kubeapi {
namespace {

bool IsNumeric(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), absl::ascii_isdigit);
}

bool IsIdentifier(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(),
                                      [](char c) { return absl::ascii_isalnum(c) || c == '-'; });
}

absl::Status NotAVersion(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("\"", text, "\" is not a semantic version: ", why));
}

// Normalize: Kubernetes' CEL normalisation, before the strict parse.
absl::StatusOr<std::string> Normalize(absl::string_view text) {
  std::vector<std::string> parts =
      absl::StrSplit(absl::StripPrefix(text, "v"), absl::MaxSplits('.', 2));
  for (std::string& part : parts) {
    if (part.size() <= 1) continue;
    const size_t nonzero = part.find_first_not_of('0');
    part = nonzero == std::string::npos ? std::string() : part.substr(nonzero);
    if (part.empty() || !absl::ascii_isdigit(part[0])) part.insert(part.begin(), '0');
  }
  if (parts.size() < 3) {
    if (parts.back().find_first_of("+-") != std::string::npos) {
      return NotAVersion(text, "short version cannot contain PreRelease/Build meta data");
    }
    while (parts.size() < 3) parts.push_back("0");
  }
  return absl::StrJoin(parts, ".");
}

}  // namespace

absl::StatusOr<Semver> Semver::Parse(absl::string_view text, bool normalize) {
  std::string normalized;
  if (normalize) {
    absl::StatusOr<std::string> done = Normalize(text);
    if (!done.ok()) return done.status();
    normalized = *std::move(done);
  } else {
    normalized = std::string(text);
  }
  absl::string_view rest = normalized;
  if (rest.empty()) return NotAVersion(text, "version string empty");
  Semver version;
  if (size_t plus = rest.find('+'); plus != absl::string_view::npos) {
    version.build = absl::StrSplit(rest.substr(plus + 1), '.');
    for (const std::string& part : version.build) {
      if (!IsIdentifier(part)) return NotAVersion(text, "invalid build metadata");
    }
    rest = rest.substr(0, plus);
  }
  if (size_t dash = rest.find('-'); dash != absl::string_view::npos) {
    version.pre_release = absl::StrSplit(rest.substr(dash + 1), '.');
    for (const std::string& part : version.pre_release) {
      if (!IsIdentifier(part)) return NotAVersion(text, "invalid pre-release identifier");
      if (IsNumeric(part) && part.size() > 1 && part[0] == '0') {
        return NotAVersion(text, "a numeric pre-release identifier has a leading zero");
      }
      uint64_t number = 0;
      if (IsNumeric(part) && !absl::SimpleAtoi(part, &number)) {
        return NotAVersion(text, "a numeric pre-release identifier is too large");
      }
    }
    rest = rest.substr(0, dash);
  }
  std::vector<absl::string_view> numbers = absl::StrSplit(rest, '.');
  if (numbers.size() != 3) return NotAVersion(text, "no Major.Minor.Patch elements found");
  uint64_t* targets[] = {&version.major, &version.minor, &version.patch};
  for (size_t i = 0; i < 3; ++i) {
    if (!IsNumeric(numbers[i])) return NotAVersion(text, "invalid character in a version number");
    if (numbers[i].size() > 1 && numbers[i][0] == '0') {
      return NotAVersion(text, "a version number has a leading zero");
    }
    if (!absl::SimpleAtoi(numbers[i], targets[i])) {
      return NotAVersion(text, "a version number is too large");
    }
  }
  return version;
}

int Semver::Compare(const Semver& other) const {
  for (auto [a, b] : {std::pair{major, other.major}, std::pair{minor, other.minor},
                      std::pair{patch, other.patch}}) {
    if (a != b) return a < b ? -1 : 1;
  }
  // A version without a pre-release ranks above one with.
  if (pre_release.empty() || other.pre_release.empty()) {
    if (pre_release.empty() == other.pre_release.empty()) return 0;
    return pre_release.empty() ? 1 : -1;
  }
  for (size_t i = 0; i < pre_release.size() && i < other.pre_release.size(); ++i) {
    const std::string& a = pre_release[i];
    const std::string& b = other.pre_release[i];
    const bool a_numeric = IsNumeric(a);
    const bool b_numeric = IsNumeric(b);
    if (a_numeric && b_numeric) {
      // No leading zeros: the longer number is the larger.
      if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
      if (a != b) return a < b ? -1 : 1;
    } else if (a_numeric != b_numeric) {
      return a_numeric ? -1 : 1;  // numeric identifiers rank below alphanumeric ones
    } else if (a != b) {
      return a < b ? -1 : 1;
    }
  }
  if (pre_release.size() == other.pre_release.size()) return 0;
  return pre_release.size() < other.pre_release.size() ? -1 : 1;
}

std::string Semver::ToString() const {
  std::string out = absl::StrCat(major, ".", minor, ".", patch);
  if (!pre_release.empty()) absl::StrAppend(&out, "-", absl::StrJoin(pre_release, "."));
  if (!build.empty()) absl::StrAppend(&out, "+", absl::StrJoin(build, "."));
  return out;
}

}  // namespace devmgr::kubeapi
