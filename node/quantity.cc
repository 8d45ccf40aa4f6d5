#include "node/quantity.h"

#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace devmgr::node {
namespace {

absl::Status NotAQuantity(absl::string_view quantity, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("quantity \"", quantity, "\" ", why));
}

// The suffixes of Kubernetes' resource.Quantity: decimal SI as a power of ten, binary SI as
// a power of 1024.
struct Suffix {
  absl::string_view text;
  int power_of_ten;
  int power_of_1024;
};
constexpr Suffix kSuffixes[] = {
    {"Ki", 0, 1}, {"Mi", 0, 2}, {"Gi", 0, 3}, {"Ti", 0, 4}, {"Pi", 0, 5},
    {"Ei", 0, 6}, {"n", -9, 0}, {"u", -6, 0}, {"m", -3, 0}, {"k", 3, 0},
    {"M", 6, 0},  {"G", 9, 0},  {"T", 12, 0}, {"P", 15, 0}, {"E", 18, 0},
};

}  // namespace

absl::StatusOr<int64_t> ParseDeviceCount(absl::string_view quantity) {
  absl::string_view rest = quantity;
  bool negative = false;
  if (!rest.empty() && (rest.front() == '+' || rest.front() == '-')) {
    negative = rest.front() == '-';
    rest.remove_prefix(1);
  }
  // The number: digits with at most one decimal point, at least one digit.
  std::string digits;
  int power_of_ten = 0;
  bool seen_point = false;
  size_t i = 0;
  for (; i < rest.size(); ++i) {
    const char c = rest[i];
    if (absl::ascii_isdigit(c)) {
      digits += c;
      if (seen_point) --power_of_ten;
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (digits.empty()) return NotAQuantity(quantity, "is not a number");
  rest.remove_prefix(i);

  int power_of_1024 = 0;
  // "E" alone is the exa suffix and "Ei" exbi; an exponent has a digit or sign after the e.
  const bool exponent_form = rest.size() >= 2 && (rest[0] == 'e' || rest[0] == 'E') &&
                             (absl::ascii_isdigit(rest[1]) || rest[1] == '+' || rest[1] == '-');
  if (exponent_form) {
    int exponent = 0;
    if (!absl::SimpleAtoi(rest.substr(1), &exponent)) {
      return NotAQuantity(quantity, "has a malformed exponent");
    }
    if (exponent > 100 || exponent < -100) return NotAQuantity(quantity, "is out of range");
    power_of_ten += exponent;
  } else if (!rest.empty()) {
    const Suffix* found = nullptr;
    for (const Suffix& suffix : kSuffixes) {
      if (rest == suffix.text) found = &suffix;
    }
    if (found == nullptr) return NotAQuantity(quantity, "has an unknown suffix");
    power_of_ten += found->power_of_ten;
    power_of_1024 = found->power_of_1024;
  }

  // Drop leading zeros; a value of zero is zero whatever its scale.
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return 0;
  digits.erase(0, first);
  // A negative power of ten must be absorbed by trailing zeros, or the value is fractional.
  while (power_of_ten < 0) {
    if (digits.back() != '0') {
      return NotAQuantity(quantity, "is not a whole number of devices");
    }
    digits.pop_back();
    ++power_of_ten;
  }
  if (negative) return NotAQuantity(quantity, "is negative");

  // Nineteen digits always fit in 64 unsigned bits; each scaling step is checked first.
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (digits.size() > 19) return NotAQuantity(quantity, "is too large");
  uint64_t value = 0;
  for (char c : digits) value = value * 10 + static_cast<uint64_t>(c - '0');
  if (value > kMax) return NotAQuantity(quantity, "is too large");
  for (int k = 0; k < power_of_ten; ++k) {
    if (value > kMax / 10) return NotAQuantity(quantity, "is too large");
    value *= 10;
  }
  for (int k = 0; k < power_of_1024; ++k) {
    if (value > kMax / 1024) return NotAQuantity(quantity, "is too large");
    value *= 1024;
  }
  return static_cast<int64_t>(value);
}

}  // namespace devmgr::node
