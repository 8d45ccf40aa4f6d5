// Kubernetes' named formats in selectors: upstream's TestFormat table
// (k8s.io/apiserver/pkg/cel/library), case by case under its names, and the "format" case of
// apiextensions-apiserver's TestValidationExpressions. A selector evaluates to bool, so a case
// whose result is an optional compares it with the value upstream expects.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cel/named_formats.h"
#include "cel/program.h"
#include "tests/cel/eval_text.h"

namespace devmgr::cel {
namespace {

// None: the case's expression gives optional.none(): the value has the format.
EvalCase None(std::string name, std::string expression) {
  return {std::move(name), absl::StrCat(expression, " == optional.none()"), "true"};
}

// Messages: the case's expression gives the list of `message` alone.
EvalCase Messages(std::string name, std::string expression, const std::string& message) {
  return {std::move(name), absl::StrCat(expression, " == optional.of([", message, "])"), "true"};
}

constexpr char kLabel[] =
    R"m("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")m";
constexpr char kSubdomain[] =
    R"m("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")m";
constexpr char kDns1035[] =
    R"m("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")m";
constexpr char kQualifiedName[] =
    R"m("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")m";
constexpr char kLabelValue[] =
    R"m("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")m";

TEST(CelFormatLibraryTest, TestFormat) {
  std::vector<EvalCase> cases = {
      None("example_usage_dns1123Label", R"(format.dns1123Label().validate("my-label-name"))"),
      None("example_usage_dns1123Subdomain",
           R"(format.dns1123Subdomain().validate("apiextensions.k8s.io"))"),
      None("example_usage_qualifiedName",
           R"(format.qualifiedName().validate("apiextensions.k8s.io/v1beta1"))"),
      None("example_usage_dns1123LabelPrefix",
           R"(format.dns1123LabelPrefix().validate("my-label-prefix-"))"),
      None("example_usage_dns1123SubdomainPrefix",
           R"(format.dns1123SubdomainPrefix().validate("mysubdomain.prefix.-"))"),
      None("example_usage_dns1035LabelPrefix",
           R"(format.dns1035LabelPrefix().validate("my-label-prefix-"))"),
      None("example_usage_uri", R"(format.uri().validate("http://example.com"))"),
      None("example_usage_uuid",
           R"(format.uuid().validate("123e4567-e89b-12d3-a456-426614174000"))"),
      None("example_usage_byte", R"(format.byte().validate("aGVsbG8="))"),
      None("example_usage_date", R"(format.date().validate("2021-01-01"))"),
      None("example_usage_datetime", R"(format.datetime().validate("2021-01-01T00:00:00Z"))"),
      Messages("dns1123Label", R"(format.dns1123Label().validate("contains a space"))", kLabel),
      Messages("dns1123Subdomain", R"(format.dns1123Subdomain().validate("contains a space"))",
               kSubdomain),
      Messages("dns1035Label", R"(format.dns1035Label().validate("contains a space"))", kDns1035),
      Messages("qualifiedName", R"(format.qualifiedName().validate("contains a space"))",
               kQualifiedName),
      Messages("dns1123LabelPrefix", R"(format.dns1123LabelPrefix().validate("contains a space-"))",
               kLabel),
      Messages("dns1123SubdomainPrefix",
               R"(format.dns1123SubdomainPrefix().validate("contains a space-"))", kSubdomain),
      Messages("dns1035LabelPrefix", R"(format.dns1035LabelPrefix().validate("contains a space-"))",
               kDns1035),
      None("dns1123Label_Success", R"(format.dns1123Label().validate("my-label-name"))"),
      None("dns1123Subdomain_Success", R"(format.dns1123Subdomain().validate("example.com"))"),
      None("dns1035Label_Success", R"(format.dns1035Label().validate("my-label-name"))"),
      None("qualifiedName_Success", R"(format.qualifiedName().validate("my.name"))"),
      None("byte_success", R"(format.byte().validate("aGVsbG8="))"),
      Messages("byte_failure", R"(format.byte().validate("aGVsbG8"))", R"("invalid base64")"),
      None("date_success", R"(format.date().validate("2020-01-01"))"),
      Messages("date_failure", R"(format.date().validate("2020-01-32"))", R"("invalid date")"),
      None("datetime_success", R"(format.datetime().validate("2020-01-01T00:00:00Z"))"),
      Messages("datetime_failure", R"(format.datetime().validate("2020-01-32T00:00:00Z"))",
               R"("invalid datetime")"),
      {"unknown_format", R"(format.named("unknown").hasValue())", "false"},
      None("labelValue_success", R"(format.labelValue().validate("my-cool-label-Value"))"),
      Messages("labelValue_failure",
               R"(format.labelValue().validate("my-cool-label-Value!!\n\n!!!"))", kLabelValue),
  };
  // Every format by name, and compared with every other.
  for (size_t i = 0; i < kNamedFormatCount; ++i) {
    const std::string lhs = NamedFormatAt(i).name;
    cases.push_back({"lookup and comparison", "format.named('" + lhs + "').hasValue()", "true"});
    cases.push_back({"comparison with lookup succeeds",
                     "format.named('" + lhs + "').value() == format." + lhs + "()", "true"});
    for (size_t j = 0; j < kNamedFormatCount; ++j) {
      if (i == j) continue;
      const std::string rhs = NamedFormatAt(j).name;
      cases.push_back(
          {"compare_" + lhs + "_" + rhs, "format." + lhs + "() == format." + rhs + "()", "false"});
    }
  }
  ExpectCases(cases);
}

TEST(CelFormatLibraryTest, TestValidationExpressionsFormat) {
  const std::vector<std::string> valid = {
      R"(format.dns1123Label().validate("my-label-name") == optional.none())",
      R"(format.dns1123Subdomain().validate("apiextensions.k8s.io") == optional.none())",
      R"(format.qualifiedName().validate("apiextensions.k8s.io/v1beta1") == optional.none())",
      R"(format.dns1123LabelPrefix().validate("my-label-prefix-") == optional.none())",
      R"(format.dns1123SubdomainPrefix().validate("mysubdomain.prefix.-") == optional.none())",
      R"(format.dns1035LabelPrefix().validate("my-label-prefix-") == optional.none())",
      R"(format.uri().validate("http://example.com") == optional.none())",
      R"(format.uuid().validate("123e4567-e89b-12d3-a456-426614174000") == optional.none())",
      R"(format.byte().validate("aGVsbG8=") == optional.none())",
      R"(format.date().validate("2021-01-01") == optional.none())",
      R"(format.datetime().validate("2021-01-01T00:00:00Z") == optional.none())",
      R"(format.named("dns1123Label").value().validate("my-name") == optional.none())",
      R"m(format.dns1123Label().validate("contains a space").value()[0] == "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \'-\', and must start and end with an alphanumeric character (e.g. \'my-name\',  or \'123-abc\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?\')")m",
      R"(!format.named("unknown").hasValue())",
  };
  for (const std::string& expression : valid) EXPECT_EQ(EvalText(expression), "true") << expression;
}

// What the formats' checks answer beyond upstream's table, as the checks they port answer.
TEST(CelFormatLibraryTest, TheChecksAnswerAsTheirGoFunctions) {
  ExpectCases({
      // uri: Go's ParseRequestURI, its error the message.
      Messages("a relative reference is no request URI", R"(format.uri().validate("a/b"))",
               R"("parse \"a/b\": invalid URI for request")"),
      // uuid: hex digits in either case, the dashes optional.
      None("a uuid without dashes",
           R"(format.uuid().validate("123E4567E89B12D3A456426614174000"))"),
      Messages("a uuid too short", R"(format.uuid().validate("123e4567-e89b-12d3-a456"))",
               R"("does not match the UUID format")"),
      // byte: padded standard base64; the empty string is none.
      Messages("empty base64", R"(format.byte().validate(""))", R"("invalid base64")"),
      Messages("URL-safe base64", R"(format.byte().validate("aGVsbG8_"))", R"("invalid base64")"),
      // date: a day the month has (2024 is a leap year, 2100 is not), two digits each.
      None("29 February of a leap year", R"(format.date().validate("2024-02-29"))"),
      Messages("29 February of 2100", R"(format.date().validate("2100-02-29"))",
               R"("invalid date")"),
      Messages("a month of one digit", R"(format.date().validate("2021-1-01"))",
               R"("invalid date")"),
      Messages("month 13", R"(format.date().validate("2021-13-01"))", R"("invalid date")"),
      // datetime: 't' and 'z' in either case, a fraction and an offset; hours to 23.
      None("lower case, a fraction and an offset",
           R"(format.datetime().validate("2021-01-01t23:59:59.123+05:30"))"),
      Messages("hour 24", R"(format.datetime().validate("2021-01-01T24:00:00Z"))",
               R"("invalid datetime")"),
      Messages("no zone", R"(format.datetime().validate("2021-01-01T00:00:00"))",
               R"("invalid datetime")"),
      // Prefixes: the last two characters of a name ending in '-' stand as "a".
      None("a prefix ending in a dash", R"(format.dns1123LabelPrefix().validate("ab-"))"),
      Messages("a dash alone is no prefix", R"(format.dns1123LabelPrefix().validate("-"))", kLabel),
      Messages("a label too long",
               absl::StrCat("format.dns1123Label().validate('", std::string(64, 'a'), "')"),
               R"("must be no more than 63 characters")"),
  });
}

}  // namespace
}  // namespace devmgr::cel
