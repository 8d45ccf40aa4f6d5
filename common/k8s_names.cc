#include "common/k8s_names.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace devmgr {
namespace {

constexpr size_t kLabelMaxLength = 63;
constexpr size_t kSubdomainMaxLength = 253;

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAlnum(char c) { return IsAlpha(c) || (c >= '0' && c <= '9'); }

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool MatchesLabel(absl::string_view value) {
  if (value.empty() || !IsLowerAlnum(value.front()) || !IsLowerAlnum(value.back())) return false;
  for (char c : value) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

// Labels joined by '.'.
bool MatchesSubdomain(absl::string_view value) {
  for (absl::string_view label : absl::StrSplit(value, '.')) {
    if (!MatchesLabel(label)) return false;
  }
  return true;
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool MatchesQualifiedNamePart(absl::string_view value) {
  if (value.empty() || !IsAlnum(value.front()) || !IsAlnum(value.back())) return false;
  for (char c : value) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

std::string MaxLengthError(size_t length) {
  return absl::StrCat("must be no more than ", length, " characters");
}

// apimachinery's RegexError: the message, its examples and the expression it is checked with.
std::string RegexError(absl::string_view message, absl::string_view expression,
                       std::initializer_list<absl::string_view> examples) {
  std::string out = absl::StrCat(message, " (e.g. ");
  bool first = true;
  for (absl::string_view example : examples) {
    absl::StrAppend(&out, first ? "" : " or ", "'", example, "', ");
    first = false;
  }
  absl::StrAppend(&out, "regex used for validation is '", expression, "')");
  return out;
}

constexpr absl::string_view kLabelFormat = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr absl::string_view kSubdomainFormat =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr absl::string_view kDns1035LabelFormat = "[a-z]([-a-z0-9]*[a-z0-9])?";
constexpr absl::string_view kQualifiedNameFormat = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr absl::string_view kQualifiedNameMessage =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";

std::string QualifiedNameRegexError() {
  return RegexError(kQualifiedNameMessage, kQualifiedNameFormat, {"MyName", "my.name", "123-abc"});
}

}  // namespace

std::vector<std::string> Dns1123LabelErrors(absl::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > kLabelMaxLength) errors.push_back(MaxLengthError(kLabelMaxLength));
  if (MatchesLabel(value)) return errors;
  if (MatchesSubdomain(value)) {
    errors.push_back("must not contain dots");
  } else {
    errors.push_back(RegexError(
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character",
        kLabelFormat, {"my-name", "123-abc"}));
  }
  return errors;
}

std::vector<std::string> Dns1123SubdomainErrors(absl::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > kSubdomainMaxLength) errors.push_back(MaxLengthError(kSubdomainMaxLength));
  if (!MatchesSubdomain(value)) {
    errors.push_back(RegexError(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character",
        kSubdomainFormat, {"example.com"}));
  }
  return errors;
}

std::vector<std::string> Dns1035LabelErrors(absl::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > kLabelMaxLength) errors.push_back(MaxLengthError(kLabelMaxLength));
  if (!MatchesLabel(value) || !IsAlpha(value.front())) {
    errors.push_back(RegexError(
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
        "an alphabetic character, and end with an alphanumeric character",
        kDns1035LabelFormat, {"my-name", "abc-123"}));
  }
  return errors;
}

namespace {

std::string MaskTrailingDash(absl::string_view name) {
  if (name.size() > 1 && name.back() == '-') {
    return absl::StrCat(name.substr(0, name.size() - 2), "a");
  }
  return std::string(name);
}

}  // namespace

std::vector<std::string> Dns1123LabelPrefixErrors(absl::string_view value) {
  return Dns1123LabelErrors(MaskTrailingDash(value));
}

std::vector<std::string> Dns1123SubdomainPrefixErrors(absl::string_view value) {
  return Dns1123SubdomainErrors(MaskTrailingDash(value));
}

std::vector<std::string> Dns1035LabelPrefixErrors(absl::string_view value) {
  return Dns1035LabelErrors(MaskTrailingDash(value));
}

std::vector<std::string> QualifiedNameErrors(absl::string_view value) {
  std::vector<std::string> errors;
  std::vector<absl::string_view> parts = absl::StrSplit(value, '/');
  if (parts.size() > 2) {
    return {absl::StrCat("a qualified name ", QualifiedNameRegexError(),
                         " with an optional DNS subdomain prefix and '/' (e.g. "
                         "'example.com/MyName')")};
  }
  absl::string_view name = parts.back();
  if (parts.size() == 2) {
    if (parts[0].empty()) {
      errors.push_back("prefix part must be non-empty");
    } else {
      for (const std::string& message : Dns1123SubdomainErrors(parts[0])) {
        errors.push_back(absl::StrCat("prefix part ", message));
      }
    }
  }
  if (name.empty()) {
    errors.push_back("name part must be non-empty");
  } else if (name.size() > kLabelMaxLength) {
    errors.push_back(absl::StrCat("name part ", MaxLengthError(kLabelMaxLength)));
  }
  if (!MatchesQualifiedNamePart(name)) {
    errors.push_back(absl::StrCat("name part ", QualifiedNameRegexError()));
  }
  return errors;
}

std::vector<std::string> LabelValueErrors(absl::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > kLabelMaxLength) errors.push_back(MaxLengthError(kLabelMaxLength));
  if (!value.empty() && !MatchesQualifiedNamePart(value)) {
    errors.push_back(RegexError(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
        "or '.', and must start and end with an alphanumeric character",
        absl::StrCat("(", kQualifiedNameFormat, ")?"), {"MyValue", "my_value", "12345"}));
  }
  return errors;
}

std::vector<std::string> CIdentifierErrors(absl::string_view value) {
  bool valid = !value.empty() && (IsAlpha(value.front()) || value.front() == '_');
  for (char c : value) valid = valid && (IsAlnum(c) || c == '_');
  if (valid) return {};
  return {
      RegexError("a valid C identifier must start with alphabetic character or '_', followed "
                 "by a string of alphanumeric characters or '_'",
                 "[A-Za-z_][A-Za-z0-9_]*", {"my_name", "MY_NAME", "MyName"})};
}

bool IsExtendedResourceName(absl::string_view name) {
  constexpr absl::string_view kRequestsPrefix = "requests.";
  if (!absl::StrContains(name, '/') || absl::StrContains(name, "kubernetes.io/")) return false;
  if (absl::StartsWith(name, kRequestsPrefix)) return false;
  return QualifiedNameErrors(absl::StrCat(kRequestsPrefix, name)).empty();
}

}  // namespace devmgr
