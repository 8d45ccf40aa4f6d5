#include "kubeapi/quantity.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace devmgr::kubeapi {
namespace {

__extension__ using UInt128 = unsigned __int128;

constexpr int64_t kNanosPerUnit = 1'000'000'000;
// The largest magnitude kept: well inside 128 bits, so that a sum of two never overflows.
constexpr Int128 kMax = static_cast<Int128>(1) << 125;

absl::Status NotAQuantity(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("quantity \"", text, "\" ", why));
}

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

// Multiply: value * factor, or false when the result passes kMax.
bool Multiply(Int128& value, int64_t factor) {
  if (value > kMax / factor) return false;
  value *= factor;
  return true;
}

// Pow10: 10^exponent for 0 <= exponent <= 38.
Int128 Pow10(int exponent) {
  Int128 power = 1;
  for (int k = 0; k < exponent; ++k) power *= 10;
  return power;
}

// ScaledInt64: value * 10^exponent (exponent >= 0) when it fits in 64 signed bits, as
// apimachinery's positiveScaleInt64.
std::optional<int64_t> ScaledInt64(Int128 value, int exponent) {
  for (int k = 0; k <= exponent; ++k) {
    if (value > std::numeric_limits<int64_t>::max() ||
        value < std::numeric_limits<int64_t>::min()) {
      return std::nullopt;
    }
    if (k < exponent) value *= 10;
  }
  return static_cast<int64_t>(value);
}

// ParsedScale: the scale ParseQuantity gives a number written with `integer_part` and
// `fraction_part` and a suffix of 10^exponent or 1024^power_of_1024: that of a 64-bit mantissa
// when the digits fit its fast path, `decimal_form` otherwise.
int ParsedScale(absl::string_view integer_part, absl::string_view fraction_part, int exponent,
                int power_of_1024, int decimal_form) {
  // Upstream drops the integer part's leading zeros, and keeps at least one digit.
  integer_part.remove_prefix(std::min(integer_part.find_first_not_of('0'), integer_part.size()));
  const std::string number = absl::StrCat(integer_part.empty() ? "0" : integer_part, fraction_part);
  const auto integer_digits = static_cast<int>(number.size() - fraction_part.size());
  const auto fraction_digits = static_cast<int>(fraction_part.size());
  int scale = 0;
  int precision = -1;
  if (power_of_1024 > 0) {
    const int binary_exponent = 10 * power_of_1024;
    if (fraction_digits == 0) precision = 15 - integer_digits - binary_exponent * 3 / 10 - 1;
  } else {
    scale = exponent;
    precision = 18 - integer_digits - fraction_digits;
  }
  if (precision < 0) return decimal_form;
  scale -= fraction_digits;
  if (scale < -9) return decimal_form;
  int64_t mantissa = 0;
  if (!absl::SimpleAtoi(number, &mantissa)) return decimal_form;
  if ((static_cast<Int128>(mantissa) << (10 * power_of_1024)) >
      std::numeric_limits<int64_t>::max()) {
    return decimal_form;
  }
  return scale;
}

}  // namespace

absl::StatusOr<Quantity> Quantity::Parse(absl::string_view text) {
  absl::string_view rest = text;
  bool negative = false;
  if (!rest.empty() && (rest.front() == '+' || rest.front() == '-')) {
    negative = rest.front() == '-';
    rest.remove_prefix(1);
  }
  std::string digits;
  int power_of_ten = 0;
  bool seen_point = false;
  // The digits before and after the point, as written.
  std::string integer_part;
  std::string fraction_part;
  size_t i = 0;
  for (; i < rest.size(); ++i) {
    const char c = rest[i];
    if (absl::ascii_isdigit(c)) {
      digits += c;
      (seen_point ? fraction_part : integer_part) += c;
      if (seen_point) --power_of_ten;
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (digits.empty()) return NotAQuantity(text, "is not a number");
  rest.remove_prefix(i);

  int power_of_1024 = 0;
  // "E" alone is the exa suffix and "Ei" exbi; an exponent has a digit or sign after the e.
  const bool exponent_form = rest.size() >= 2 && (rest[0] == 'e' || rest[0] == 'E') &&
                             (absl::ascii_isdigit(rest[1]) || rest[1] == '+' || rest[1] == '-');
  if (exponent_form) {
    int exponent = 0;
    if (!absl::SimpleAtoi(rest.substr(1), &exponent)) {
      return NotAQuantity(text, "has a malformed exponent");
    }
    if (exponent > 100 || exponent < -100) return NotAQuantity(text, "is out of range");
    power_of_ten += exponent;
  } else if (!rest.empty()) {
    const Suffix* found = nullptr;
    for (const Suffix& suffix : kSuffixes) {
      if (rest == suffix.text) found = &suffix;
    }
    if (found == nullptr) return NotAQuantity(text, "has an unknown suffix");
    power_of_ten += found->power_of_ten;
    power_of_1024 = found->power_of_1024;
  }

  // In nano-units: digits * 10^(power_of_ten + 9) * 1024^power_of_1024. Digits past the nano
  // are dropped and round the value up (away from zero), as ParseQuantity rounds.
  const int upstream_scale = ParsedScale(integer_part, fraction_part,
                                         power_of_ten + static_cast<int>(fraction_part.size()),
                                         power_of_1024, kDecimalForm);
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return Quantity(0, upstream_scale);
  digits.erase(0, first);
  int scale = power_of_ten + 9;
  bool round_up = false;
  while (scale < 0 && !digits.empty()) {
    round_up = round_up || digits.back() != '0';
    digits.pop_back();
    ++scale;
  }
  if (scale < 0) digits.clear();
  Int128 nanos = 0;
  for (char c : digits) {
    if (!Multiply(nanos, 10)) return NotAQuantity(text, "is too large");
    nanos += c - '0';
  }
  for (int k = 0; k < scale; ++k) {
    if (!Multiply(nanos, 10)) return NotAQuantity(text, "is too large");
  }
  for (int k = 0; k < power_of_1024; ++k) {
    if (!Multiply(nanos, 1024)) return NotAQuantity(text, "is too large");
  }
  if (round_up) ++nanos;
  return Quantity(negative ? -nanos : nanos, upstream_scale);
}

Quantity Quantity::FromInt64(int64_t value) {
  return Quantity(static_cast<Int128>(value) * kNanosPerUnit, 0);
}

std::optional<int64_t> Quantity::Mantissa() const {
  if (scale_ == kDecimalForm) return std::nullopt;
  // A scale past 28 holds only zero: anything else is past the range.
  if (nanos_ == 0) return 0;
  return ScaledInt64(nanos_ / Pow10(9 + scale_), 0);
}

int Quantity::ScaleOfSum(const Quantity& other, int sign) const {
  const std::optional<int64_t> mine = Mantissa();
  const std::optional<int64_t> theirs = other.Mantissa();
  if (!mine.has_value() || !theirs.has_value()) return kDecimalForm;
  if (*theirs == 0) return scale_;
  if (*mine == 0) return other.scale_;
  const int scale = std::min<int>(scale_, other.scale_);
  const std::optional<int64_t> a = ScaledInt64(*mine, scale_ - scale);
  // In 128 bits: the smallest 64-bit mantissa negated does not fit in 64 (upstream's Go wraps
  // it round; here the sum goes to the decimal form).
  const std::optional<int64_t> b =
      ScaledInt64(sign * static_cast<Int128>(*theirs), other.scale_ - scale);
  if (!a.has_value() || !b.has_value()) return kDecimalForm;
  const Int128 sum = static_cast<Int128>(*a) + *b;
  if (sum > std::numeric_limits<int64_t>::max() || sum < std::numeric_limits<int64_t>::min()) {
    return kDecimalForm;
  }
  return scale;
}

std::optional<int64_t> Quantity::AsInt64() const {
  const std::optional<int64_t> mantissa = Mantissa();
  if (!mantissa.has_value() || scale_ < 0) return std::nullopt;
  return ScaledInt64(*mantissa, scale_);
}

int Quantity::Compare(const Quantity& other) const {
  return nanos_ < other.nanos_ ? -1 : (nanos_ > other.nanos_ ? 1 : 0);
}

absl::StatusOr<Quantity> Quantity::Add(const Quantity& other) const {
  const Int128 sum = nanos_ + other.nanos_;
  if (sum > kMax || sum < -kMax) return absl::OutOfRangeError("quantity overflow");
  return Quantity(sum, ScaleOfSum(other, 1));
}

absl::StatusOr<Quantity> Quantity::Sub(const Quantity& other) const {
  const Int128 difference = nanos_ - other.nanos_;
  if (difference > kMax || difference < -kMax) return absl::OutOfRangeError("quantity overflow");
  return Quantity(difference, ScaleOfSum(other, -1));
}

int Quantity::Sign() const { return nanos_ < 0 ? -1 : (nanos_ > 0 ? 1 : 0); }

bool Quantity::IsWhole() const { return nanos_ % kNanosPerUnit == 0; }

bool Quantity::IsInteger() const {
  if (!IsWhole()) return false;
  const Int128 whole = nanos_ / kNanosPerUnit;
  return whole >= std::numeric_limits<int64_t>::min() &&
         whole <= std::numeric_limits<int64_t>::max();
}

absl::StatusOr<int64_t> Quantity::AsInteger() const {
  if (!IsInteger()) {
    return absl::OutOfRangeError(absl::StrCat("cannot convert value to integer: ", ToString(),
                                              " is not a whole number "
                                              "in 64 bits"));
  }
  return static_cast<int64_t>(nanos_ / kNanosPerUnit);
}

std::optional<int64_t> Quantity::ExactMilli() const {
  constexpr Int128 kNanosPerMilli = kNanosPerUnit / 1000;
  if (nanos_ % kNanosPerMilli != 0) return std::nullopt;
  const Int128 milli = nanos_ / kNanosPerMilli;
  if (milli > std::numeric_limits<int64_t>::max() || milli < std::numeric_limits<int64_t>::min()) {
    return std::nullopt;
  }
  return static_cast<int64_t>(milli);
}

int64_t Quantity::CeilInt64() const {
  Int128 whole = nanos_ / kNanosPerUnit;
  if (nanos_ % kNanosPerUnit > 0) ++whole;
  if (whole > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (whole < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(whole);
}

double Quantity::AsApproximateFloat() const {
  return static_cast<double>(nanos_) / static_cast<double>(kNanosPerUnit);
}

std::string Quantity::ToString() const {
  const bool negative = nanos_ < 0;
  const UInt128 magnitude = negative ? static_cast<UInt128>(-nanos_) : static_cast<UInt128>(nanos_);
  const auto whole_part = magnitude / kNanosPerUnit;
  auto fraction = static_cast<int64_t>(magnitude % kNanosPerUnit);
  std::string whole;
  auto rest = whole_part;
  do {
    whole.insert(whole.begin(), static_cast<char>('0' + static_cast<int>(rest % 10)));
    rest /= 10;
  } while (rest != 0);
  std::string out = absl::StrCat(negative ? "-" : "", whole);
  if (fraction != 0) {
    std::string digits = std::to_string(fraction);
    digits.insert(digits.begin(), 9 - digits.size(), '0');
    digits.erase(digits.find_last_not_of('0') + 1);
    absl::StrAppend(&out, ".", digits);
  }
  return out;
}

}  // namespace devmgr::kubeapi
