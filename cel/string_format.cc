#include "cel/string_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/go_float.h"
#include "common/go_quote.h"
#include "common/utf8.h"

namespace devmgr::cel {
namespace {

using Kind = Value::Kind;
using TK = Type::Kind;

// cel-go writes a clause's precision into a Go format ("%.<p>f", "%<p>e") for golang.org/x/text,
// whose reader gives up on a number once what it read so far is over a million: from
// 10,000,010 on, the clause comes out as Go's "%!(NOVERB)".
constexpr int64_t kGoUnreadableNumber = 10'000'010;
constexpr char kNoVerb[] = "%!(NOVERB)";
constexpr int kDefaultPrecision = 6;

// Kind of a value as the checker would type it, for FormatTakes.
TK StaticKind(const Value& value) {
  switch (value.kind()) {
    case Kind::kNull:
      return TK::kNull;
    case Kind::kBool:
      return TK::kBool;
    case Kind::kInt:
      return TK::kInt;
    case Kind::kUint:
      return TK::kUint;
    case Kind::kDouble:
      return TK::kDouble;
    case Kind::kString:
      return TK::kString;
    case Kind::kBytes:
      return TK::kBytes;
    case Kind::kList:
      return TK::kList;
    case Kind::kMap:
      return TK::kMap;
    case Kind::kType:
      return TK::kType;
    case Kind::kSemver:
      return TK::kSemver;
    case Kind::kQuantity:
      return TK::kQuantity;
    case Kind::kIP:
      return TK::kIP;
    case Kind::kCIDR:
      return TK::kCIDR;
    case Kind::kURL:
      return TK::kURL;
    case Kind::kFormat:
      return TK::kFormat;
    case Kind::kOptional:
      return TK::kOptional;
    case Kind::kError:
      break;
  }
  return TK::kAny;  // taken by no clause
}

// ---- Integers in a base, as Go's %d, %b, %o, %x and %X write them. ----

std::string InBase(uint64_t magnitude, bool negative, int base, bool upper) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string text;
  do {
    text.push_back(digits[magnitude % base]);
    magnitude /= base;
  } while (magnitude > 0);
  if (negative) text.push_back('-');
  std::reverse(text.begin(), text.end());
  return text;
}

// Integer: an int or a uint in `base`; false for other values.
bool Integer(const Value& value, int base, bool upper, std::string& text) {
  if (value.kind() == Kind::kInt) {
    const int64_t i = value.int_value();
    // The magnitude of the most negative int64 is one more than the largest: taken unsigned.
    const uint64_t magnitude = i < 0 ? 0 - static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
    text = InBase(magnitude, i < 0, base, upper);
    return true;
  }
  if (value.kind() == Kind::kUint) {
    text = InBase(value.uint_value(), false, base, upper);
    return true;
  }
  return false;
}

std::string Hex(absl::string_view bytes, bool upper) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    text.push_back(digits[c >> 4]);
    text.push_back(digits[c & 15]);
  }
  return text;
}

// ---- Doubles in en_US, as golang.org/x/text's printer writes them for cel-go. ----

// Printf: C's printf of one double, %f or %e (`conversion`), with a precision (the same correctly
// rounded digits as Go's strconv, which x/text asks for).
std::string Printf(char conversion, int precision, double value) {
  std::string text(static_cast<size_t>(precision) + 330, '\0');
  const int size = conversion == 'e'
                       ? std::snprintf(text.data(), text.size(), "%.*e", precision, value)
                       : std::snprintf(text.data(), text.size(), "%.*f", precision, value);
  text.resize(static_cast<size_t>(size));
  return text;
}

// GroupThousands: integer digits with a comma before each group of three from the right.
std::string GroupThousands(absl::string_view digits) {
  std::string grouped;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped.push_back(',');
    grouped.push_back(digits[i]);
  }
  return grouped;
}

// SplitScientific: the power of ten of a number printed in scientific notation ("1.5e-07":
// -7), with what comes before the 'e' in `mantissa`.
int SplitScientific(const std::string& printed, std::string& mantissa) {
  const size_t e = printed.find('e');
  mantissa = printed.substr(0, e);
  int exponent = 0;
  std::from_chars(printed.data() + e + (printed[e + 1] == '+' ? 2 : 1),
                  printed.data() + printed.size(), exponent);
  return exponent;
}

// ShortestFixed: the shortest digits that read back as `magnitude` (Go's strconv 'g', -1), in
// fixed notation, zeros standing for the digits past them: 1e23 is 100000000000000000000000,
// not the double's exact 99999999999999991611392.
std::string ShortestFixed(double magnitude) {
  char buffer[32];
  const std::to_chars_result end =
      std::to_chars(buffer, buffer + sizeof buffer, magnitude, std::chars_format::scientific);
  std::string significant;
  const int exponent = SplitScientific(std::string(buffer, end.ptr), significant);
  significant.erase(std::remove(significant.begin(), significant.end(), '.'), significant.end());
  // The point goes after exponent + 1 of the significant digits.
  const int point = exponent + 1;
  if (point <= 0)
    return absl::StrCat("0.", std::string(static_cast<size_t>(-point), '0'), significant);
  if (static_cast<size_t>(point) >= significant.size()) {
    return significant + std::string(static_cast<size_t>(point) - significant.size(), '0');
  }
  return absl::StrCat(significant.substr(0, static_cast<size_t>(point)), ".",
                      significant.substr(static_cast<size_t>(point)));
}

// Fixed: %.<precision>f. x/text keeps the precision as a uint8 least and an int16 most number
// of fraction digits: below 256 they are the precision; above, the fraction is rounded to the
// most, its trailing zeros dropped down to the least, and with a negative most (32,768 to
// 65,535, and so on every 65,536) it is not rounded at all (the shortest digits that read back).
// The sign is written for a value below zero, so -0 has none.
std::string Fixed(double value, int64_t precision) {
  if (precision >= kGoUnreadableNumber) return kNoVerb;
  if (std::isnan(value)) return "NaN";
  const bool negative = value < 0;
  if (std::isinf(value)) return negative ? "-∞" : "∞";
  const size_t least = static_cast<uint8_t>(precision);
  const int most = static_cast<int16_t>(static_cast<uint16_t>(precision));
  const double magnitude = std::fabs(value);
  const std::string digits = most >= 0 ? Printf('f', most, magnitude) : ShortestFixed(magnitude);
  const size_t point = digits.find('.');
  std::string fraction = point == std::string::npos ? "" : digits.substr(point + 1);
  while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
  if (fraction.size() < least) fraction.append(least - fraction.size(), '0');
  std::string text = negative ? "-" : "";
  absl::StrAppend(&text, GroupThousands(absl::string_view(digits).substr(0, point)));
  if (!fraction.empty()) absl::StrAppend(&text, ".", fraction);
  return text;
}

// Scientific: %e with the clause's precision as x/text reads "%<precision>e": a width (the
// least number of characters, spaces in front; kept as a uint16), the fraction always of six
// digits, the exponent of at least two superscript digits after ×10.
std::string Scientific(double value, int64_t width) {
  if (width >= kGoUnreadableNumber) return kNoVerb;
  static constexpr const char* kSuperscript[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};
  std::string text;
  if (std::isnan(value)) {
    text = "NaN";
  } else if (std::isinf(value)) {
    text = value < 0 ? "-∞" : "∞";
  } else {
    std::string mantissa;
    const int exponent =
        SplitScientific(Printf('e', kDefaultPrecision, std::fabs(value)), mantissa);
    text = absl::StrCat(value < 0 ? "-" : "", mantissa, "×10", exponent < 0 ? "⁻" : "");
    const std::string digits = absl::StrCat(std::abs(exponent));
    if (digits.size() < 2) text += kSuperscript[0];
    for (char digit : digits) text += kSuperscript[digit - '0'];
  }
  const size_t least = static_cast<uint16_t>(width);
  // The text is valid UTF-8: its characters are the bytes that do not continue one.
  const size_t characters = static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
  if (characters < least) text.insert(0, least - characters, ' ');
  return text;
}

// GoFixed6: Go's %.6f, as cel-go formats a double in a list or a map.
std::string GoFixed6(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value < 0 ? "-Inf" : "+Inf";
  return Printf('f', kDefaultPrecision, value);
}

// ---- Values as text. ----

// Formatter: the clauses' formatting of one format() call, paying for what it formats.
class Formatter {
 public:
  explicit Formatter(EvalContext& context) : context_(context) {}

  // Clause: `value` formatted by a clause, into `out`.
  absl::Status Clause(const Value& value, FormatVerb verb, std::optional<int64_t> precision,
                      std::string& out) {
    if (!Pay(1)) return Stopped();
    if (!FormatTakes(verb, StaticKind(value))) {
      return absl::InvalidArgumentError(FormatClauseError(verb, value.TypeName()));
    }
    std::string text;
    switch (verb) {
      case FormatVerb::kString:
        return String(value, out);
      case FormatVerb::kDecimal:
        Integer(value, 10, false, text);
        break;
      case FormatVerb::kBinary:
        if (value.kind() == Kind::kBool) {
          text = value.bool_value() ? "1" : "0";
        } else {
          Integer(value, 2, false, text);
        }
        break;
      case FormatVerb::kOctal:
        Integer(value, 8, false, text);
        break;
      case FormatVerb::kHex:
      case FormatVerb::kHexUpper: {
        const bool upper = verb == FormatVerb::kHexUpper;
        if (value.kind() == Kind::kString) {
          text = Hex(value.string_value(), upper);
        } else if (value.kind() == Kind::kBytes) {
          text = Hex(value.bytes_value(), upper);
        } else {
          Integer(value, 16, upper, text);
        }
        break;
      }
      case FormatVerb::kFixed:
      case FormatVerb::kScientific: {
        absl::StatusOr<double> number = FloatingPoint(value, verb);
        if (!number.ok()) return number.status();
        // Paid for once written, as x/text's truncation of the precision keeps it short (a
        // fraction of at most 32,767 digits, a width of at most 65,535 characters).
        const int64_t p = precision.value_or(kDefaultPrecision);
        text = verb == FormatVerb::kFixed ? Fixed(*number, p) : Scientific(*number, p);
        break;
      }
    }
    return Append(text, out);
  }

 private:
  // FloatingPoint: a double, or one of the strings "NaN", "Infinity" and "-Infinity", which %f
  // and %e take as the double they name.
  static absl::StatusOr<double> FloatingPoint(const Value& value, FormatVerb verb) {
    if (value.kind() == Kind::kDouble) return value.double_value();
    const std::string& text = value.string_value();
    if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (text == "Infinity") return std::numeric_limits<double>::infinity();
    if (text == "-Infinity") return -std::numeric_limits<double>::infinity();
    return absl::InvalidArgumentError(FormatClauseError(verb, value.TypeName()));
  }

  // String: %s, as Go's conversion of the value to a string; lists and maps as CEL literals.
  absl::Status String(const Value& value, std::string& out) {
    switch (value.kind()) {
      case Kind::kList:
        return List(value, out);
      case Kind::kMap:
        return Map(value, out);
      case Kind::kInt:
      case Kind::kUint: {
        std::string text;
        Integer(value, 10, false, text);
        return Append(text, out);
      }
      case Kind::kDouble:
        return Append(FormatGoFloat(value.double_value()), out);
      case Kind::kBool:
        return Append(value.bool_value() ? "true" : "false", out);
      case Kind::kString:
        return Append(value.string_value(), out);
      case Kind::kBytes:
        if (!ValidUtf8(value.bytes_value())) {
          return absl::InvalidArgumentError(
              "could not convert argument \"invalid UTF-8 in bytes, cannot convert to string\" "
              "to string");
        }
        return Append(value.bytes_value(), out);
      case Kind::kType:
        return Append(value.type_value(), out);
      case Kind::kNull:
        return Append("null", out);
      default:
        return absl::InvalidArgumentError(FormatClauseError(FormatVerb::kString, value.TypeName()));
    }
  }

  // Item: a list's item or a map's value, in the form it has in a CEL literal.
  absl::Status Item(const Value& value, std::string& out) {
    if (!Pay(1)) return Stopped();
    switch (value.kind()) {
      case Kind::kString:
        return Append(GoQuote(value.string_value()), out);
      case Kind::kBytes: {
        std::string text;
        if (absl::Status s = String(value, text); !s.ok()) return s;
        return Append(absl::StrCat("b", GoQuote(text)), out);
      }
      case Kind::kDouble: {
        const double d = value.double_value();
        const std::string text = GoFixed6(d);
        return Append(std::isfinite(d) ? text : GoQuote(text), out);
      }
      case Kind::kInt:
      case Kind::kUint:
      case Kind::kBool:
      case Kind::kNull:
      case Kind::kType:
      case Kind::kList:
      case Kind::kMap:
        return String(value, out);
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("no formatting function for ", value.TypeName()));
    }
  }

  absl::Status List(const Value& list, std::string& out) {
    if (!Append("[", out).ok()) return Stopped();
    bool first = true;
    for (const Value& item : list.list()) {
      if (!first && !Append(", ", out).ok()) return Stopped();
      first = false;
      if (absl::Status s = Item(item, out); !s.ok()) return s;
    }
    return Append("]", out);
  }

  // Map: the entries as key:value, ordered by the key's text.
  absl::Status Map(const Value& map, std::string& out) {
    std::vector<std::pair<std::string, std::string>> entries;
    for (const auto& [key, value] : map.map().entries) {
      if (!Pay(1)) return Stopped();
      std::string k;
      if (key.kind() == Kind::kString) {
        k = GoQuote(key.string_value());
      } else if (key.kind() == Kind::kBool) {
        k = key.bool_value() ? "true" : "false";
      } else if (!Integer(key, 10, false, k)) {
        return absl::InvalidArgumentError(
            absl::StrCat("no formatting function for map key of type ", key.TypeName()));
      }
      if (!Pay(k.size() / 10)) return Stopped();
      std::string v;
      if (absl::Status s = Item(value, v); !s.ok()) return s;
      entries.emplace_back(std::move(k), std::move(v));
    }
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    // Each entry's text was paid for as it was written.
    out += "{";
    for (size_t i = 0; i < entries.size(); ++i) {
      absl::StrAppend(&out, i > 0 ? ", " : "", entries[i].first, ":", entries[i].second);
    }
    out += "}";
    return absl::OkStatus();
  }

  bool Pay(uint64_t cost) { return context_.AddCost(cost); }
  absl::Status Stopped() const { return absl::CancelledError(context_.StopReason()); }

  // Append: `text` at the end of `out`, paid for first (one for ten characters).
  absl::Status Append(absl::string_view text, std::string& out) {
    if (!Pay(text.size() / 10)) return Stopped();
    out.append(text.data(), text.size());
    return absl::OkStatus();
  }

  EvalContext& context_;
};

// ParsePrecision: the precision at the start of `clause` (".3" of ".3f"), with the number of
// characters it takes; none without a point.
absl::Status ParsePrecision(absl::string_view clause, size_t& read,
                            std::optional<int64_t>& precision) {
  read = 0;
  if (clause[0] != '.') return absl::OkStatus();
  size_t end = 1;
  while (true) {
    if (end >= clause.size()) {
      return absl::InvalidArgumentError("could not find end of precision specifier");
    }
    if (!absl::ascii_isdigit(static_cast<unsigned char>(clause[end]))) break;
    ++end;
  }
  const absl::string_view digits = clause.substr(1, end - 1);
  int64_t value = 0;
  if (!absl::SimpleAtoi(digits, &value)) {
    // Go's strconv.Atoi: nothing to read, or more than an int holds.
    return absl::InvalidArgumentError(
        absl::StrCat("error while converting precision to integer: strconv.Atoi: parsing \"",
                     digits, "\": ", digits.empty() ? "invalid syntax" : "value out of range"));
  }
  read = end;
  precision = value;
  return absl::OkStatus();
}

// ParseVerb: the clause's letter.
absl::StatusOr<FormatVerb> ParseVerb(char letter) {
  switch (letter) {
    case 's':
      return FormatVerb::kString;
    case 'd':
      return FormatVerb::kDecimal;
    case 'f':
      return FormatVerb::kFixed;
    case 'e':
      return FormatVerb::kScientific;
    case 'b':
      return FormatVerb::kBinary;
    case 'x':
      return FormatVerb::kHex;
    case 'X':
      return FormatVerb::kHexUpper;
    case 'o':
      return FormatVerb::kOctal;
    default: {
      // cel-go takes the byte as a code point (a byte of a longer UTF-8 sequence too), which
      // is below U+0100.
      const unsigned char byte = static_cast<unsigned char>(letter);
      std::string shown(1, letter);
      if (byte >= 0x80) {
        shown = {static_cast<char>(0xC0 | (byte >> 6)), static_cast<char>(0x80 | (byte & 0x3F))};
      }
      return absl::InvalidArgumentError(
          absl::StrCat("unrecognized formatting clause \"", shown, "\""));
    }
  }
}

}  // namespace

std::string FormatClauseError(FormatVerb verb, absl::string_view type_name) {
  const char* what = "";
  switch (verb) {
    case FormatVerb::kString:
      what =
          "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, "
          "types, durations, and timestamps";
      break;
    case FormatVerb::kDecimal:
      what = "decimal clause can only be used on integers";
      break;
    case FormatVerb::kFixed:
      what = "fixed-point clause can only be used on doubles";
      break;
    case FormatVerb::kScientific:
      what = "scientific clause can only be used on doubles";
      break;
    case FormatVerb::kBinary:
      what = "only integers and bools can be formatted as binary";
      break;
    case FormatVerb::kHex:
    case FormatVerb::kHexUpper:
      what = "only integers, byte buffers, and strings can be formatted as hex";
      break;
    case FormatVerb::kOctal:
      what = "octal clause can only be used on integers";
      break;
  }
  return absl::StrCat(what, ", was given ", type_name);
}

bool FormatTakes(FormatVerb verb, TK kind) {
  if (kind == TK::kDyn || kind == TK::kParam) return true;
  const auto one_of = [kind](std::initializer_list<TK> kinds) {
    return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
  };
  switch (verb) {
    case FormatVerb::kString:
      return one_of({TK::kList, TK::kMap, TK::kInt, TK::kUint, TK::kDouble, TK::kBool, TK::kString,
                     TK::kBytes, TK::kType, TK::kNull});
    case FormatVerb::kDecimal:
    case FormatVerb::kOctal:
      return one_of({TK::kInt, TK::kUint});
    case FormatVerb::kFixed:
    case FormatVerb::kScientific:
      return one_of({TK::kDouble, TK::kString});
    case FormatVerb::kBinary:
      return one_of({TK::kInt, TK::kUint, TK::kBool});
    case FormatVerb::kHex:
    case FormatVerb::kHexUpper:
      return one_of({TK::kInt, TK::kUint, TK::kString, TK::kBytes});
  }
  return false;
}

absl::Status WalkFormat(
    absl::string_view format, size_t arguments, bool checking,
    absl::FunctionRef<void(absl::string_view)> text,
    absl::FunctionRef<absl::Status(size_t, FormatVerb, std::optional<int64_t>)> clause) {
  size_t argument = 0;
  size_t i = 0;
  while (i < format.size()) {
    if (format[i] != '%') {
      text(format.substr(i, 1));
      ++i;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '%') {
      text("%");
      i += 2;
      continue;
    }
    const absl::Status missing =
        absl::InvalidArgumentError(absl::StrCat("index ", argument, " out of range"));
    if (!checking && argument >= arguments) return missing;
    if (i + 1 >= format.size()) return absl::InvalidArgumentError("unexpected end of string");
    if (argument >= arguments) return missing;
    const absl::string_view rest = format.substr(i + 1);
    size_t read = 0;
    std::optional<int64_t> precision;
    absl::Status parsed = ParsePrecision(rest, read, precision);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "could not parse formatting clause: error while parsing precision: ", parsed.message()));
    }
    absl::StatusOr<FormatVerb> verb = ParseVerb(rest[read]);
    if (!verb.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("could not parse formatting clause: ", verb.status().message()));
    }
    if (absl::Status formatted = clause(argument, *verb, precision); !formatted.ok()) {
      if (absl::IsCancelled(formatted)) return formatted;
      return absl::InvalidArgumentError(
          absl::StrCat("error during formatting: ", formatted.message()));
    }
    i += 1 + read + 1;
    ++argument;
  }
  return absl::OkStatus();
}

Value StringFormat(const std::vector<Value>& args, EvalContext& context) {
  const std::string& format = args[0].string_value();
  const List& arguments = args[1].list();
  if (!context.AddCost(1 + format.size() / 10)) return Value::ErrorOf(context.StopReason());
  Formatter formatter(context);
  std::string out;
  const absl::Status walked = WalkFormat(
      format, arguments.size(), /*checking=*/false,
      [&out](absl::string_view t) { out.append(t.data(), t.size()); },
      [&](size_t index, FormatVerb verb, std::optional<int64_t> precision) {
        return formatter.Clause(arguments[index], verb, precision, out);
      });
  if (!walked.ok()) return Value::ErrorOf(std::string(walked.message()));
  return Value::String(std::move(out));
}

}  // namespace devmgr::cel
