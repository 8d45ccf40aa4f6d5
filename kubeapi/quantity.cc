#include "kubeapi/quantity.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace devmgr::kubeapi {

// A quantity is kept for every device capacity and attribute: the format takes padding beside the
// scale, not more room.
static_assert(sizeof(Quantity) == 2 * sizeof(Int128));

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

// Digits: `value` in decimal digits.
std::string Digits(UInt128 value) {
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(value % 10)));
    value /= 10;
  } while (value != 0);
  return digits;
}

// SuffixFor: the suffix of 10^power_of_ten * 1024^power_of_1024, "" for 1; nullopt for none.
std::optional<absl::string_view> SuffixFor(int power_of_ten, int power_of_1024) {
  if (power_of_ten == 0 && power_of_1024 == 0) return "";
  for (const Suffix& suffix : kSuffixes) {
    if (suffix.power_of_ten == power_of_ten && suffix.power_of_1024 == power_of_1024) {
      return suffix.text;
    }
  }
  return std::nullopt;
}

// MultiplyDigits: the decimal digits of `digits` (a number written in them) times `factor`.
std::string MultiplyDigits(const std::string& digits, int factor) {
  std::string product;
  int carry = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    carry += (*it - '0') * factor;
    product.push_back(static_cast<char>('0' + carry % 10));
    carry /= 10;
  }
  for (; carry > 0; carry /= 10) product.push_back(static_cast<char>('0' + carry % 10));
  std::reverse(product.begin(), product.end());
  return product;
}

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
  // ParseQuantity reads a number without digits ("Ki", "m", "e3", "-", ".") as 0; only an empty
  // text is refused.
  if (text.empty()) return NotAQuantity(text, "is not a number");
  const bool no_digits = digits.empty();
  if (no_digits) digits = "0";
  rest.remove_prefix(i);

  int power_of_1024 = 0;
  Format format = Format::kDecimalSI;
  // "E" alone is the exa suffix and "Ei" exbi; an exponent has a digit or sign after the e.
  const bool exponent_form = rest.size() >= 2 && (rest[0] == 'e' || rest[0] == 'E') &&
                             (absl::ascii_isdigit(rest[1]) || rest[1] == '+' || rest[1] == '-');
  if (exponent_form) {
    int exponent = 0;
    // A sign and digits only: SimpleAtoi also takes spaces around them, ParseQuantity none.
    absl::string_view exponent_text = rest.substr(1);
    if (exponent_text.front() == '+' || exponent_text.front() == '-') {
      exponent_text.remove_prefix(1);
    }
    if (exponent_text.empty() ||
        !std::all_of(exponent_text.begin(), exponent_text.end(),
                     [](char c) { return absl::ascii_isdigit(c); }) ||
        !absl::SimpleAtoi(rest.substr(1), &exponent)) {
      return NotAQuantity(text, "has a malformed exponent");
    }
    if (exponent > 100 || exponent < -100) return NotAQuantity(text, "is out of range");
    power_of_ten += exponent;
    format = Format::kDecimalExponent;
  } else if (!rest.empty()) {
    const Suffix* found = nullptr;
    for (const Suffix& suffix : kSuffixes) {
      if (rest == suffix.text) found = &suffix;
    }
    if (found == nullptr) {
      return NotAQuantity(text, no_digits ? "is not a number" : "has an unknown suffix");
    }
    power_of_ten += found->power_of_ten;
    power_of_1024 = found->power_of_1024;
    if (power_of_1024 > 0) format = Format::kBinarySI;
  }

  // In nano-units: digits * 1024^power_of_1024 * 10^(power_of_ten + 9). Digits past the nano
  // are dropped and round the value up (away from zero), as ParseQuantity rounds; the binary
  // factor comes first, so that 0.000000000001Ki is 1.024n, which rounds up to 2n.
  const int upstream_scale = ParsedScale(integer_part, fraction_part,
                                         power_of_ten + static_cast<int>(fraction_part.size()),
                                         power_of_1024, kDecimalForm);
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return Quantity(0, upstream_scale, format);
  digits.erase(0, first);
  for (int k = 0; k < power_of_1024; ++k) digits = MultiplyDigits(digits, 1024);
  int scale = power_of_ten + 9;
  bool round_up = false;
  while (scale < 0 && !digits.empty()) {
    round_up = round_up || digits.back() != '0';
    digits.pop_back();
    ++scale;
  }
  if (scale < 0) digits.clear();
  // A binary quantity past int64's largest is that largest, as ParseQuantity caps it ("10Ei"
  // reads as 9223372036854775807); a decimal one past what is held here is refused.
  const Int128 most = static_cast<Int128>(std::numeric_limits<int64_t>::max()) * kNanosPerUnit;
  const auto past_range = [&]() -> absl::StatusOr<Quantity> {
    if (format == Format::kBinarySI) return Quantity(negative ? -most : most, 0, format);
    return NotAQuantity(text, "is too large");
  };
  Int128 nanos = 0;
  for (char c : digits) {
    if (!Multiply(nanos, 10)) return past_range();
    nanos += c - '0';
  }
  for (int k = 0; k < scale; ++k) {
    if (!Multiply(nanos, 10)) return past_range();
  }
  if (round_up) ++nanos;
  if (format == Format::kBinarySI && nanos > most) return past_range();
  // Below 1, a binary suffix would need a fraction: upstream makes it decimal.
  if (format == Format::kBinarySI && nanos < kNanosPerUnit) format = Format::kDecimalSI;
  return Quantity(negative ? -nanos : nanos, upstream_scale, format);
}

Quantity Quantity::FromInt64(int64_t value, Format format) {
  return Quantity(static_cast<Int128>(value) * kNanosPerUnit, 0, format);
}

Quantity Quantity::FromMilli(int64_t milli, Format format) {
  return Quantity(static_cast<Int128>(milli) * (kNanosPerUnit / 1000), -3, format);
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
  return Quantity(sum, ScaleOfSum(other, 1), FormatOfSum(other));
}

absl::StatusOr<Quantity> Quantity::Sub(const Quantity& other) const {
  const Int128 difference = nanos_ - other.nanos_;
  if (difference > kMax || difference < -kMax) return absl::OutOfRangeError("quantity overflow");
  return Quantity(difference, ScaleOfSum(other, -1), FormatOfSum(other));
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
  if (nanos_ == 0) return "0";
  const std::string sign = nanos_ < 0 ? "-" : "";
  UInt128 magnitude = nanos_ < 0 ? static_cast<UInt128>(-nanos_) : static_cast<UInt128>(nanos_);
  constexpr UInt128 kKibi = 1024;
  if (format_ == Format::kBinarySI && magnitude % kNanosPerUnit == 0 &&
      magnitude >= kKibi * kNanosPerUnit) {
    UInt128 whole = magnitude / kNanosPerUnit;
    int power = 0;
    while (whole % kKibi == 0 && SuffixFor(0, power + 1).has_value()) {
      whole /= kKibi;
      ++power;
    }
    return absl::StrCat(sign, Digits(whole), *SuffixFor(0, power));
  }
  // The value as digits times 10^exponent: every factor of ten into the exponent, then the
  // exponent down to a multiple of three (at least -9, where it started).
  int exponent = -9;
  while (magnitude % 10 == 0) {
    magnitude /= 10;
    ++exponent;
  }
  while (exponent % 3 != 0) {
    magnitude *= 10;
    --exponent;
  }
  // Decimal SI past its largest suffix (E) is written with an exponent, as in that format.
  std::optional<absl::string_view> suffix;
  if (format_ != Format::kDecimalExponent) suffix = SuffixFor(exponent, 0);
  if (!suffix.has_value() && exponent != 0) {
    return absl::StrCat(sign, Digits(magnitude), "e", exponent);
  }
  return absl::StrCat(sign, Digits(magnitude), suffix.value_or(""));
}

}  // namespace devmgr::kubeapi
