#include "common/go_float.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace devmgr {

std::string FormatGoFloat(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  if (d == 0) return std::signbit(d) ? "-0" : "0";
  // The shortest digits, as "[-]d[.ddd]e<exponent>".
  char buffer[64];
  const std::to_chars_result scientific =
      std::to_chars(buffer, buffer + sizeof(buffer), d, std::chars_format::scientific);
  const absl::string_view text(buffer, static_cast<size_t>(scientific.ptr - buffer));
  const size_t e = text.find('e');
  const bool negative = text[0] == '-';
  std::string digits;
  for (char c : text.substr(negative ? 1 : 0, e - (negative ? 1 : 0))) {
    if (c != '.') digits += c;
  }
  int exponent = 0;
  if (!absl::SimpleAtoi(text.substr(e + 1), &exponent)) return std::string(text);
  std::string out = negative ? "-" : "";
  // Go uses %e when the exponent is below -4 or at least 6 (the shortest precision's rule).
  if (exponent < -4 || exponent >= 6) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) absl::StrAppend(&out, ".", digits.substr(1));
    absl::StrAppend(&out, exponent < 0 ? "e-" : "e+", std::abs(exponent) < 10 ? "0" : "",
                    std::abs(exponent));
    return out;
  }
  // %f: the digits with the decimal point after `point` of them.
  const int point = exponent + 1;
  const int size = static_cast<int>(digits.size());
  if (point <= 0) {
    absl::StrAppend(&out, "0.", std::string(static_cast<size_t>(-point), '0'), digits);
  } else if (point >= size) {
    absl::StrAppend(&out, digits, std::string(static_cast<size_t>(point - size), '0'));
  } else {
    absl::StrAppend(&out, digits.substr(0, static_cast<size_t>(point)), ".",
                    digits.substr(static_cast<size_t>(point)));
  }
  return out;
}

}  // namespace devmgr
