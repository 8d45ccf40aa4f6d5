#include "cel/named_formats.h"

#include <re2/re2.h>

#include <array>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/go_url.h"
#include "common/k8s_names.h"

namespace devmgr::cel {
namespace {

// An absolute URL or path, as an HTTP request names one; the message is Go's parse error.
std::vector<std::string> UriErrors(absl::string_view value) {
  absl::StatusOr<GoURL> url = GoURL::ParseRequestURI(value);
  if (url.ok()) return {};
  return {std::string(url.status().message())};
}

// Matches: Go's regexp.MatchString, whose syntax is RE2's.
bool Matches(absl::string_view value, const re2::RE2& pattern) {
  return re2::RE2::PartialMatch(re2::StringPiece(value.data(), value.size()), pattern);
}

// kube-openapi's strfmt "uuid": 32 hex digits, optionally in 8-4-4-4-12 groups, either case.
std::vector<std::string> UuidErrors(absl::string_view value) {
  static const re2::RE2* const kUuid =
      new re2::RE2("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$");
  if (Matches(value, *kUuid)) return {};
  return {"does not match the UUID format"};
}

// kube-openapi's strfmt "byte": standard base64 with its padding, at least one group.
std::vector<std::string> ByteErrors(absl::string_view value) {
  static const re2::RE2* const kBase64 = new re2::RE2(
      "^(?:[A-Za-z0-9+\\/]{4})*(?:[A-Za-z0-9+\\/]{2}==|[A-Za-z0-9+\\/]{3}=|[A-Za-z0-9+\\/]{4})$");
  if (Matches(value, *kBase64)) return {};
  return {"invalid base64"};
}

// IsDate: Go's time.Parse("2006-01-02", value) succeeds: four digits, '-', two, '-', two, and
// a day the month of that year has.
bool IsDate(absl::string_view value) {
  if (value.size() != 10 || value[4] != '-' || value[7] != '-') return false;
  int parts[3] = {0, 0, 0};
  const std::array<std::pair<size_t, size_t>, 3> fields = {{{0, 4}, {5, 2}, {8, 2}}};
  for (size_t i = 0; i < fields.size(); ++i) {
    for (size_t at = fields[i].first; at < fields[i].first + fields[i].second; ++at) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(value[at]))) return false;
      parts[i] = parts[i] * 10 + (value[at] - '0');
    }
  }
  const int year = parts[0];
  const int month = parts[1];
  const int day = parts[2];
  if (month < 1 || month > 12) return false;
  const bool leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
  constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return day >= 1 && day <= kDays[month - 1] + (month == 2 && leap ? 1 : 0);
}

std::vector<std::string> DateErrors(absl::string_view value) {
  if (IsDate(value)) return {};
  return {"invalid date"};
}

// kube-openapi's strfmt "datetime" (IsDateTime): in lower case, a date before the first 't'
// and, between it and the next 't' if any, hh:mm:ss with an optional fraction and 'z' or an
// offset, hours to 23 and minutes and seconds to 59.
std::vector<std::string> DatetimeErrors(absl::string_view value) {
  static const re2::RE2* const kTime =
      new re2::RE2("^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$");
  const std::vector<std::string> invalid = {"invalid datetime"};
  if (value.size() < 4) return invalid;
  const std::string lower = absl::AsciiStrToLower(value);
  const size_t t = lower.find('t');
  if (t == std::string::npos || !IsDate(absl::string_view(lower).substr(0, t))) return invalid;
  const absl::string_view rest = absl::string_view(lower).substr(t + 1);
  std::string hours;
  std::string minutes;
  std::string seconds;
  const absl::string_view time = rest.substr(0, rest.find('t'));
  if (!re2::RE2::PartialMatch(re2::StringPiece(time.data(), time.size()), *kTime, &hours, &minutes,
                              &seconds)) {
    return invalid;
  }
  if (hours > "23" || minutes > "59" || seconds > "59") return invalid;
  return {};
}

// The formats, as upstream declares them; the regex sizes are upstream's estimates.
constexpr std::array<NamedFormat, kNamedFormatCount> kFormats = {{
    {"dns1123Label", "format.dns1123Label", 30, Dns1123LabelErrors},
    {"dns1123Subdomain", "format.dns1123Subdomain", 60, Dns1123SubdomainErrors},
    {"dns1035Label", "format.dns1035Label", 30, Dns1035LabelErrors},
    {"qualifiedName", "format.qualifiedName", 60, QualifiedNameErrors},
    {"dns1123LabelPrefix", "format.dns1123LabelPrefix", 30, Dns1123LabelPrefixErrors},
    {"dns1123SubdomainPrefix", "format.dns1123SubdomainPrefix", 60, Dns1123SubdomainPrefixErrors},
    {"dns1035LabelPrefix", "format.dns1035LabelPrefix", 30, Dns1035LabelPrefixErrors},
    {"labelValue", "format.labelValue", 40, LabelValueErrors},
    {"uri", "format.uri", 1103, UriErrors},
    {"uuid", "format.uuid", 70, UuidErrors},
    {"byte", "format.byte", 84, ByteErrors},
    {"date", "format.date", 71, DateErrors},
    {"datetime", "format.datetime", 71, DatetimeErrors},
}};
static_assert(kFormats.back().name != nullptr, "kNamedFormatCount counts one format too many");

}  // namespace

const NamedFormat& NamedFormatAt(size_t index) { return kFormats[index]; }

const NamedFormat* FindNamedFormat(absl::string_view name) {
  for (const NamedFormat& format : kFormats) {
    if (name == format.name) return &format;
  }
  return nullptr;
}

}  // namespace devmgr::cel
