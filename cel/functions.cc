#include "cel/functions.h"

#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cel/string_format.h"
#include "common/go_bool.h"
#include "common/go_float.h"
#include "common/go_netip.h"
#include "common/go_quote.h"
#include "common/utf8.h"

namespace devmgr::cel {
namespace {

using Kind = Value::Kind;
using TK = Type::Kind;

Value Err(std::string message) { return Value::ErrorOf(std::move(message)); }
Value Overflow() { return Err("integer overflow"); }

// ---- Strings as Unicode code points (CEL indexes strings by code point). ----

// CodePointLength: the length in bytes of the code point at `at` (1 at the end of the text).
size_t CodePointLength(const std::string& text, size_t at) {
  if (at >= text.size()) return 1;
  const auto byte = static_cast<unsigned char>(text[at]);
  size_t length = 1;
  if (byte >= 0xF0) {
    length = 4;
  } else if (byte >= 0xE0) {
    length = 3;
  } else if (byte >= 0xC0) {
    length = 2;
  }
  return std::min(text.size() - at, length);
}

// Offsets: the byte offset of each code point, and the string's size at the end.
std::vector<size_t> Offsets(const std::string& text) {
  std::vector<size_t> offsets;
  for (size_t i = 0; i < text.size(); i += CodePointLength(text, i)) offsets.push_back(i);
  offsets.push_back(text.size());
  return offsets;
}

int64_t CodePoints(const std::string& text) {
  return static_cast<int64_t>(Offsets(text).size()) - 1;
}

// Cost of work over a string: cel-go counts a tenth of its length.
uint64_t StringCost(const std::string& text) { return 1 + text.size() / 10; }

// ---- Numbers. ----

bool IsNumber(const Value& v) {
  return v.kind() == Kind::kInt || v.kind() == Kind::kUint || v.kind() == Kind::kDouble;
}

double AsDouble(const Value& v) {
  switch (v.kind()) {
    case Kind::kInt:
      return static_cast<double>(v.int_value());
    case Kind::kUint:
      return static_cast<double>(v.uint_value());
    default:
      return v.double_value();
  }
}

// Compare: -1, 0, 1 for values CEL orders (numbers across types, strings, bytes, bools);
// std::nullopt for others. NaN is unordered.
std::optional<int> Compare(const Value& a, const Value& b) {
  if (IsNumber(a) && IsNumber(b)) {
    if (a.kind() == Kind::kDouble || b.kind() == Kind::kDouble) {
      const double x = AsDouble(a);
      const double y = AsDouble(b);
      if (std::isnan(x) || std::isnan(y)) return std::nullopt;
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.kind() == Kind::kInt && b.kind() == Kind::kInt) {
      return a.int_value() < b.int_value() ? -1 : (a.int_value() > b.int_value() ? 1 : 0);
    }
    if (a.kind() == Kind::kUint && b.kind() == Kind::kUint) {
      return a.uint_value() < b.uint_value() ? -1 : (a.uint_value() > b.uint_value() ? 1 : 0);
    }
    // int against uint.
    const bool int_first = a.kind() == Kind::kInt;
    const int64_t i = int_first ? a.int_value() : b.int_value();
    const uint64_t u = int_first ? b.uint_value() : a.uint_value();
    int order = i < 0 ? -1 : (static_cast<uint64_t>(i) < u ? -1 : (static_cast<uint64_t>(i) > u));
    return int_first ? order : -order;
  }
  if (a.kind() != b.kind()) return std::nullopt;
  switch (a.kind()) {
    case Kind::kString:
      return a.string_value().compare(b.string_value()) < 0
                 ? -1
                 : (a.string_value() == b.string_value() ? 0 : 1);
    case Kind::kBytes:
      return a.bytes_value().compare(b.bytes_value()) < 0
                 ? -1
                 : (a.bytes_value() == b.bytes_value() ? 0 : 1);
    case Kind::kBool:
      return static_cast<int>(a.bool_value()) - static_cast<int>(b.bool_value());
    default:
      return std::nullopt;
  }
}

Value Relation(const std::vector<Value>& args, bool (*holds)(int)) {
  std::optional<int> order = Compare(args[0], args[1]);
  if (!order.has_value()) {
    if (IsNumber(args[0]) && IsNumber(args[1])) return Err("NaN values cannot be ordered");
    return Err(absl::StrCat("no such overload: ", args[0].TypeName(), " compared with ",
                            args[1].TypeName()));
  }
  return Value::Bool(holds(*order));
}

Value Less(const std::vector<Value>& a, EvalContext&) {
  return Relation(a, [](int o) { return o < 0; });
}
Value LessEqual(const std::vector<Value>& a, EvalContext&) {
  return Relation(a, [](int o) { return o <= 0; });
}
Value Greater(const std::vector<Value>& a, EvalContext&) {
  return Relation(a, [](int o) { return o > 0; });
}
Value GreaterEqual(const std::vector<Value>& a, EvalContext&) {
  return Relation(a, [](int o) { return o >= 0; });
}
// Compare: Equals, each value compared paid for.
Value Compare(const Value& a, const Value& b, EvalContext& c) {
  return Equals(a, b, [&c] { return c.AddCost(1); });
}

Value Equal(const std::vector<Value>& a, EvalContext& c) { return Compare(a[0], a[1], c); }
Value NotEqual(const std::vector<Value>& a, EvalContext& c) {
  Value equal = Compare(a[0], a[1], c);
  return equal.is_error() ? equal : Value::Bool(!equal.bool_value());
}

Value Arithmetic(const std::vector<Value>& a, char op) {
  const Value& x = a[0];
  const Value& y = a[1];
  if (x.kind() != y.kind()) {
    return Err(absl::StrCat("no such overload: ", x.TypeName(), " ", std::string(1, op), " ",
                            y.TypeName()));
  }
  switch (x.kind()) {
    case Kind::kInt: {
      const int64_t l = x.int_value();
      const int64_t r = y.int_value();
      int64_t out = 0;
      switch (op) {
        case '+':
          if (__builtin_add_overflow(l, r, &out)) return Overflow();
          return Value::Int(out);
        case '-':
          if (__builtin_sub_overflow(l, r, &out)) return Overflow();
          return Value::Int(out);
        case '*':
          if (__builtin_mul_overflow(l, r, &out)) return Overflow();
          return Value::Int(out);
        case '/':
          if (r == 0) return Err("division by zero");
          if (l == std::numeric_limits<int64_t>::min() && r == -1) return Overflow();
          return Value::Int(l / r);
        default:
          if (r == 0) return Err("modulus by zero");
          if (l == std::numeric_limits<int64_t>::min() && r == -1) return Overflow();
          return Value::Int(l % r);
      }
    }
    case Kind::kUint: {
      const uint64_t l = x.uint_value();
      const uint64_t r = y.uint_value();
      uint64_t out = 0;
      switch (op) {
        case '+':
          if (__builtin_add_overflow(l, r, &out)) return Overflow();
          return Value::Uint(out);
        case '-':
          if (__builtin_sub_overflow(l, r, &out)) return Overflow();
          return Value::Uint(out);
        case '*':
          if (__builtin_mul_overflow(l, r, &out)) return Overflow();
          return Value::Uint(out);
        case '/':
          if (r == 0) return Err("division by zero");
          return Value::Uint(l / r);
        default:
          if (r == 0) return Err("modulus by zero");
          return Value::Uint(l % r);
      }
    }
    case Kind::kDouble:
      switch (op) {
        case '+':
          return Value::Double(x.double_value() + y.double_value());
        case '-':
          return Value::Double(x.double_value() - y.double_value());
        case '*':
          return Value::Double(x.double_value() * y.double_value());
        case '/':
          return Value::Double(x.double_value() / y.double_value());
        default:
          break;
      }
      break;
    case Kind::kString:
      if (op == '+') return Value::String(x.string_value() + y.string_value());
      break;
    case Kind::kBytes:
      if (op == '+') return Value::BytesOf(x.bytes_value() + y.bytes_value());
      break;
    case Kind::kList:
      if (op == '+') {
        List joined = x.list();
        joined.insert(joined.end(), y.list().begin(), y.list().end());
        return Value::ListOf(std::move(joined));
      }
      break;
    default:
      break;
  }
  return Err(
      absl::StrCat("no such overload: ", x.TypeName(), " ", std::string(1, op), " ", y.TypeName()));
}

Value Add(const std::vector<Value>& a, EvalContext& c) {
  // Joined strings and lists are paid for before they are built, so that the cost limit stops a
  // chain of doublings before its memory is taken.
  uint64_t cost = 0;
  if (a[0].kind() == Kind::kString && a[1].kind() == Kind::kString) {
    cost = StringCost(a[0].string_value()) + StringCost(a[1].string_value());
  } else if (a[0].kind() == Kind::kList && a[1].kind() == Kind::kList) {
    cost = a[0].list().size() + a[1].list().size();
  }
  if (cost > 0 && !c.AddCost(cost)) return Err(c.StopReason());
  return Arithmetic(a, '+');
}
Value Subtract(const std::vector<Value>& a, EvalContext&) { return Arithmetic(a, '-'); }
Value Multiply(const std::vector<Value>& a, EvalContext&) { return Arithmetic(a, '*'); }
Value Divide(const std::vector<Value>& a, EvalContext&) { return Arithmetic(a, '/'); }
Value Modulo(const std::vector<Value>& a, EvalContext&) { return Arithmetic(a, '%'); }

Value Negate(const std::vector<Value>& a, EvalContext&) {
  if (a[0].kind() == Kind::kInt) {
    if (a[0].int_value() == std::numeric_limits<int64_t>::min()) return Overflow();
    return Value::Int(-a[0].int_value());
  }
  return Value::Double(-a[0].double_value());
}

Value Not(const std::vector<Value>& a, EvalContext&) { return Value::Bool(!a[0].bool_value()); }

// Holds: `list` has an item equal to `item` (CEL's equality: 1 == 1.0 == 1u).
bool Holds(const List& list, const Value& item, EvalContext& c) {
  for (const Value& candidate : list) {
    const Value equal = Compare(candidate, item, c);
    if (!equal.is_error() && equal.bool_value()) return true;
  }
  return false;
}

Value In(const std::vector<Value>& a, EvalContext& c) {
  if (a[1].kind() == Kind::kList) {
    c.AddCost(a[1].list().size());
    return Value::Bool(Holds(a[1].list(), a[0], c));
  }
  return Value::Bool(Find(a[1].map(), a[0]) != nullptr);
}

Value Size(const std::vector<Value>& a, EvalContext&) {
  const Value& v = a[0];
  switch (v.kind()) {
    case Kind::kString:
      return Value::Int(CodePoints(v.string_value()));
    case Kind::kBytes:
      return Value::Int(static_cast<int64_t>(v.bytes_value().size()));
    case Kind::kList:
      return Value::Int(static_cast<int64_t>(v.list().size()));
    default:
      return Value::Int(static_cast<int64_t>(v.map().entries.size()));
  }
}

// ---- Conversions. ----

// Text that Go's strconv would read as a number may not have spaces around it (absl's parsers
// skip them); `sign` says whether a leading '+' or '-' may come first (ParseUint takes none).
bool NumberText(absl::string_view text, bool sign) {
  if (text.empty() || absl::ascii_isspace(static_cast<unsigned char>(text.front())) ||
      absl::ascii_isspace(static_cast<unsigned char>(text.back()))) {
    return false;
  }
  return sign || absl::ascii_isdigit(static_cast<unsigned char>(text.front()));
}

Value ToInt(const std::vector<Value>& a, EvalContext&) {
  const Value& v = a[0];
  switch (v.kind()) {
    case Kind::kInt:
      return v;
    case Kind::kUint:
      if (v.uint_value() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Err("range error converting uint to int");
      }
      return Value::Int(static_cast<int64_t>(v.uint_value()));
    case Kind::kDouble: {
      const double d = v.double_value();
      // The doubles in range: (-2^63, 2^63), as cel-go's (it refuses -2^63 too).
      if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0)) {
        return Err("range error converting double to int");
      }
      return Value::Int(static_cast<int64_t>(d));
    }
    default: {
      int64_t out = 0;
      if (!NumberText(v.string_value(), true) || !absl::SimpleAtoi(v.string_value(), &out)) {
        return Err(absl::StrCat("cannot convert \"", v.string_value(), "\" to int"));
      }
      return Value::Int(out);
    }
  }
}

Value ToUint(const std::vector<Value>& a, EvalContext&) {
  const Value& v = a[0];
  switch (v.kind()) {
    case Kind::kUint:
      return v;
    case Kind::kInt:
      if (v.int_value() < 0) return Err("range error converting int to uint");
      return Value::Uint(static_cast<uint64_t>(v.int_value()));
    case Kind::kDouble: {
      const double d = v.double_value();
      if (!(d >= 0 && d < 18446744073709551616.0)) {
        return Err("range error converting double to uint");
      }
      return Value::Uint(static_cast<uint64_t>(d));
    }
    default: {
      uint64_t out = 0;
      if (!NumberText(v.string_value(), false) || !absl::SimpleAtoi(v.string_value(), &out)) {
        return Err(absl::StrCat("cannot convert \"", v.string_value(), "\" to uint"));
      }
      return Value::Uint(out);
    }
  }
}

// GoReadsFloat: Go's strconv.ParseFloat reads `text` as `parsed`, which absl read it as. Go
// refuses what absl takes: a hexadecimal number without its binary exponent ("0x10"), a NaN
// with a sign or a payload ("-nan", "nan(1)"), and a number too large for a double ("1e400",
// "0x1p2000"; absl gives infinity).
bool GoReadsFloat(absl::string_view text, double parsed) {
  if (std::isnan(parsed)) return absl::EqualsIgnoreCase(text, "nan");
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) text.remove_prefix(1);
  if (std::isinf(parsed)) {
    return absl::EqualsIgnoreCase(text, "inf") || absl::EqualsIgnoreCase(text, "infinity");
  }
  if (absl::StartsWithIgnoreCase(text, "0x")) {
    return absl::StrContains(text, 'p') || absl::StrContains(text, 'P');
  }
  return true;
}

Value ToDouble(const std::vector<Value>& a, EvalContext&) {
  const Value& v = a[0];
  if (v.kind() == Kind::kString) {
    double out = 0;
    if (!NumberText(v.string_value(), true) || !absl::SimpleAtod(v.string_value(), &out) ||
        !GoReadsFloat(v.string_value(), out)) {
      return Err(absl::StrCat("cannot convert \"", v.string_value(), "\" to double"));
    }
    return Value::Double(out);
  }
  return Value::Double(AsDouble(v));
}

Value ToString(const std::vector<Value>& a, EvalContext&) {
  const Value& v = a[0];
  switch (v.kind()) {
    case Kind::kString:
      return v;
    case Kind::kInt:
      return Value::String(absl::StrCat(v.int_value()));
    case Kind::kUint:
      return Value::String(absl::StrCat(v.uint_value()));
    case Kind::kDouble:
      return Value::String(FormatGoFloat(v.double_value()));
    case Kind::kBool:
      return Value::String(v.bool_value() ? "true" : "false");
    case Kind::kIP:
      return Value::String(v.ip().ToString());
    case Kind::kCIDR:
      return Value::String(v.cidr().ToString());
    default:
      if (!ValidUtf8(v.bytes_value())) {
        return Err("invalid UTF-8 in bytes, cannot convert to string");
      }
      return Value::String(v.bytes_value());
  }
}

Value ToBytes(const std::vector<Value>& a, EvalContext&) {
  return a[0].kind() == Kind::kBytes ? a[0] : Value::BytesOf(a[0].string_value());
}

Value ToBool(const std::vector<Value>& a, EvalContext&) {
  const Value& v = a[0];
  if (v.kind() == Kind::kBool) return v;
  absl::StatusOr<bool> parsed = ParseGoBool(v.string_value());
  if (parsed.ok()) return Value::Bool(*parsed);
  return Err(absl::StrCat("cannot convert \"", v.string_value(), "\" to bool"));
}

Value Dyn(const std::vector<Value>& a, EvalContext&) { return a[0]; }
Value TypeOfValue(const std::vector<Value>& a, EvalContext&) {
  return Value::TypeOf(a[0].TypeName());
}

// ---- Strings. ----

Value Contains(const std::vector<Value>& a, EvalContext& c) {
  c.AddCost(StringCost(a[0].string_value()));
  return Value::Bool(absl::StrContains(a[0].string_value(), a[1].string_value()));
}
Value StartsWith(const std::vector<Value>& a, EvalContext& c) {
  c.AddCost(StringCost(a[1].string_value()));
  return Value::Bool(absl::StartsWith(a[0].string_value(), a[1].string_value()));
}
Value EndsWith(const std::vector<Value>& a, EvalContext& c) {
  c.AddCost(StringCost(a[1].string_value()));
  return Value::Bool(absl::EndsWith(a[0].string_value(), a[1].string_value()));
}

// WithRegex runs `use` with the compiled pattern a[1], or gives the pattern's error after
// `prefix` (cel-go's matches() gives Go's error as it is, Kubernetes' find() and findAll() add
// "Illegal regex: ").
template <typename Use>
Value WithRegex(const std::vector<Value>& a, EvalContext& c, absl::string_view prefix, Use use) {
  c.AddCost(StringCost(a[0].string_value()) * StringCost(a[1].string_value()));
  absl::StatusOr<std::shared_ptr<const re2::RE2>> regex = c.regexes().Get(a[1].string_value());
  if (!regex.ok()) return Err(absl::StrCat(prefix, regex.status().message()));
  return use(**regex);
}

constexpr absl::string_view kIllegalRegex = "Illegal regex: ";

Value Matches(const std::vector<Value>& a, EvalContext& c) {
  return WithRegex(a, c, "", [&](const re2::RE2& regex) {
    return Value::Bool(re2::RE2::PartialMatch(a[0].string_value(), regex));
  });
}

Value Find(const std::vector<Value>& a, EvalContext& c) {
  return WithRegex(a, c, kIllegalRegex, [&](const re2::RE2& regex) {
    re2::StringPiece match;
    const std::string& text = a[0].string_value();
    if (!regex.Match(text, 0, text.size(), re2::RE2::UNANCHORED, &match, 1)) {
      return Value::String("");
    }
    return Value::String(std::string(match.data(), match.size()));
  });
}

// FindAll: the successive matches, as Go's Regexp.FindAllString finds them: each search starts
// where the last match ended, or one code point on after an empty match; an empty match right
// where the previous match ended is not one ("b*" in "abc": "", "b", "").
Value FindAll(const std::vector<Value>& a, EvalContext& c) {
  int64_t limit = a.size() > 2 ? a[2].int_value() : -1;
  return WithRegex(a, c, kIllegalRegex, [&](const re2::RE2& regex) {
    List found;
    const std::string& text = a[0].string_value();
    size_t at = 0;
    std::optional<size_t> previous_end;
    while (at <= text.size() && (limit < 0 || static_cast<int64_t>(found.size()) < limit)) {
      re2::StringPiece match;
      if (!regex.Match(text, at, text.size(), re2::RE2::UNANCHORED, &match, 1)) break;
      const auto start = static_cast<size_t>(match.data() - text.data());
      const size_t end = start + match.size();
      bool skipped = false;
      if (end == at) {  // empty, where the search started
        skipped = start == previous_end;
        at += CodePointLength(text, at);
      } else {
        at = end;
      }
      previous_end = end;
      if (!skipped) found.push_back(Value::String(std::string(match.data(), match.size())));
    }
    return Value::ListOf(std::move(found));
  });
}

Value CharAt(const std::vector<Value>& a, EvalContext&) {
  const std::string& text = a[0].string_value();
  const std::vector<size_t> offsets = Offsets(text);
  const int64_t i = a[1].int_value();
  const int64_t size = static_cast<int64_t>(offsets.size()) - 1;
  if (i < 0 || i > size) return Err(absl::StrCat("index out of range: ", i));
  if (i == size) return Value::String("");
  const auto at = static_cast<size_t>(i);
  return Value::String(text.substr(offsets[at], offsets[at + 1] - offsets[at]));
}

// CodePointIndex: the code point index of byte offset `byte`.
int64_t CodePointIndex(const std::vector<size_t>& offsets, size_t byte) {
  return static_cast<int64_t>(std::lower_bound(offsets.begin(), offsets.end(), byte) -
                              offsets.begin());
}

// The offset forms of indexOf and lastIndexOf, as cel-go's (v0.26) read it: an empty needle is
// found at the offset, whatever it is; a negative offset is an error; an offset at or past the
// end finds nothing.
Value IndexOf(const std::vector<Value>& a, EvalContext& c) {
  const std::string& text = a[0].string_value();
  const std::string& needle = a[1].string_value();
  c.AddCost(StringCost(text));
  const int64_t from = a.size() > 2 ? a[2].int_value() : 0;
  if (needle.empty()) return Value::Int(from);
  if (from < 0) return Err(absl::StrCat("index out of range: ", from));
  const std::vector<size_t> offsets = Offsets(text);
  const int64_t length = static_cast<int64_t>(offsets.size()) - 1;
  if (from >= length) return Value::Int(-1);
  const size_t found = text.find(needle, offsets[static_cast<size_t>(from)]);
  return Value::Int(found == std::string::npos ? -1 : CodePointIndex(offsets, found));
}

Value LastIndexOf(const std::vector<Value>& a, EvalContext& c) {
  const std::string& text = a[0].string_value();
  const std::string& needle = a[1].string_value();
  c.AddCost(StringCost(text));
  const std::vector<size_t> offsets = Offsets(text);
  const int64_t length = static_cast<int64_t>(offsets.size()) - 1;
  size_t from = text.size();
  if (a.size() > 2) {
    const int64_t index = a[2].int_value();
    if (needle.empty()) return Value::Int(index);
    if (index < 0) return Err(absl::StrCat("index out of range: ", index));
    if (index >= length) return Value::Int(-1);
    from = offsets[static_cast<size_t>(index)];
  }
  const size_t found = text.rfind(needle, from);
  return Value::Int(found == std::string::npos ? -1 : CodePointIndex(offsets, found));
}

Value LowerAscii(const std::vector<Value>& a, EvalContext& c) {
  c.AddCost(StringCost(a[0].string_value()));
  return Value::String(absl::AsciiStrToLower(a[0].string_value()));
}
Value UpperAscii(const std::vector<Value>& a, EvalContext& c) {
  c.AddCost(StringCost(a[0].string_value()));
  return Value::String(absl::AsciiStrToUpper(a[0].string_value()));
}

Value Replace(const std::vector<Value>& a, EvalContext& c) {
  const std::string& text = a[0].string_value();
  const std::string& from = a[1].string_value();
  const std::string& to = a[2].string_value();
  const int64_t limit = a.size() > 3 ? a[3].int_value() : -1;
  // Where `from` is replaced: an empty one matches before each code point and at the end, as
  // Go's strings.Replace.
  std::vector<size_t> matches;
  if (from.empty()) {
    matches = Offsets(text);
  } else {
    for (size_t found = text.find(from); found != std::string::npos;
         found = text.find(from, found + from.size())) {
      matches.push_back(found);
    }
  }
  if (limit >= 0 && matches.size() > static_cast<uint64_t>(limit)) matches.resize(limit);
  // The answer is paid for before it is built: its size can be the text's times `to`'s.
  const size_t size = text.size() + matches.size() * to.size() - matches.size() * from.size();
  if (!c.AddCost(StringCost(text) + 1 + size / 10)) return Err(c.StopReason());
  std::string out;
  out.reserve(size);
  size_t at = 0;
  for (const size_t match : matches) {
    out.append(text, at, match - at);
    out += to;
    at = match + from.size();
  }
  out.append(text, at);
  return Value::String(std::move(out));
}

Value Split(const std::vector<Value>& a, EvalContext& c) {
  const std::string& text = a[0].string_value();
  const std::string& separator = a[1].string_value();
  c.AddCost(StringCost(text));
  const int64_t limit = a.size() > 2 ? a[2].int_value() : -1;
  List parts;
  if (limit == 0) return Value::ListOf(std::move(parts));
  if (separator.empty()) {
    // Each code point on its own; the last part keeps the rest.
    const std::vector<size_t> offsets = Offsets(text);
    for (size_t i = 0; i + 1 < offsets.size(); ++i) {
      if (limit > 0 && static_cast<int64_t>(parts.size()) == limit - 1) {
        parts.push_back(Value::String(text.substr(offsets[i])));
        return Value::ListOf(std::move(parts));
      }
      parts.push_back(Value::String(text.substr(offsets[i], offsets[i + 1] - offsets[i])));
    }
    return Value::ListOf(std::move(parts));
  }
  size_t at = 0;
  while (limit < 0 || static_cast<int64_t>(parts.size()) < limit - 1) {
    const size_t found = text.find(separator, at);
    if (found == std::string::npos) break;
    parts.push_back(Value::String(text.substr(at, found - at)));
    at = found + separator.size();
  }
  parts.push_back(Value::String(text.substr(at)));
  return Value::ListOf(std::move(parts));
}

Value Substring(const std::vector<Value>& a, EvalContext&) {
  const std::string& text = a[0].string_value();
  const std::vector<size_t> offsets = Offsets(text);
  const int64_t size = static_cast<int64_t>(offsets.size()) - 1;
  const int64_t start = a[1].int_value();
  const int64_t end = a.size() > 2 ? a[2].int_value() : size;
  if (start < 0 || start > size) return Err(absl::StrCat("index out of range: ", start));
  if (end < 0 || end > size) return Err(absl::StrCat("index out of range: ", end));
  if (start > end) {
    return Err(absl::StrCat("invalid substring range. start: ", start, ", end: ", end));
  }
  return Value::String(
      text.substr(offsets[static_cast<size_t>(start)],
                  offsets[static_cast<size_t>(end)] - offsets[static_cast<size_t>(start)]));
}

// IsSpace: Go's unicode.IsSpace over UTF-8 (what ext.Strings' trim removes).
size_t SpaceAt(const std::string& text, size_t at) {
  const auto c = static_cast<unsigned char>(text[at]);
  if (c == ' ' || (c >= '\t' && c <= '\r')) return 1;
  static constexpr const char* kWide[] = {"\u0085", "\u00a0", "\u1680", "\u2000", "\u2001",
                                          "\u2002", "\u2003", "\u2004", "\u2005", "\u2006",
                                          "\u2007", "\u2008", "\u2009", "\u200a", "\u2028",
                                          "\u2029", "\u202f", "\u205f", "\u3000"};
  for (const char* space : kWide) {
    const size_t length = std::char_traits<char>::length(space);
    if (text.compare(at, length, space) == 0) return length;
  }
  return 0;
}

Value Trim(const std::vector<Value>& a, EvalContext& c) {
  const std::string& text = a[0].string_value();
  c.AddCost(StringCost(text));
  const std::vector<size_t> offsets = Offsets(text);
  size_t first = 0;
  while (first + 1 < offsets.size() && SpaceAt(text, offsets[first]) != 0) ++first;
  size_t last = offsets.size() - 1;
  while (last > first && SpaceAt(text, offsets[last - 1]) != 0) --last;
  return Value::String(text.substr(offsets[first], offsets[last] - offsets[first]));
}

// Quote: strings.quote(s), `s` as a CEL string literal: between double quotes, with the
// control characters that have a letter escape, the backslash and the double quote escaped.
// Paid for before it is built: every character may double.
Value Quote(const std::vector<Value>& a, EvalContext& c) {
  const std::string& text = a[0].string_value();
  if (!c.AddCost(1 + text.size() / 5)) return Err(c.StopReason());
  std::string quoted = "\"";
  for (const char ch : text) {
    switch (ch) {
      case '\a':
        quoted += "\\a";
        break;
      case '\b':
        quoted += "\\b";
        break;
      case '\f':
        quoted += "\\f";
        break;
      case '\n':
        quoted += "\\n";
        break;
      case '\r':
        quoted += "\\r";
        break;
      case '\t':
        quoted += "\\t";
        break;
      case '\v':
        quoted += "\\v";
        break;
      case '\\':
        quoted += "\\\\";
        break;
      case '"':
        quoted += "\\\"";
        break;
      default:
        quoted += ch;
    }
  }
  quoted += '"';
  return Value::String(std::move(quoted));
}

Value Join(const std::vector<Value>& a, EvalContext& c) {
  std::vector<std::string> parts;
  for (const Value& item : a[0].list()) {
    if (item.kind() != Kind::kString) {
      return Err(absl::StrCat("join: list element of type ", item.TypeName(), ", not string"));
    }
    parts.push_back(item.string_value());
  }
  const std::string& separator = a.size() > 1 ? a[1].string_value() : std::string();
  size_t size = parts.empty() ? 0 : (parts.size() - 1) * separator.size();
  for (const std::string& part : parts) size += part.size();
  // Paid for before it is built: a long separator between many items makes it large.
  if (!c.AddCost(1 + size / 10)) return Err(c.StopReason());
  return Value::String(absl::StrJoin(parts, separator));
}

// ---- Kubernetes' Semver library. ----

Value SemverOf(const std::vector<Value>& a, EvalContext&) {
  const bool normalize = a.size() > 1 && a[1].bool_value();
  absl::StatusOr<kubeapi::Semver> version = kubeapi::Semver::Parse(a[0].string_value(), normalize);
  if (!version.ok()) return Err(std::string(version.status().message()));
  return Value::SemverOf(*std::move(version));
}
Value IsSemver(const std::vector<Value>& a, EvalContext&) {
  const bool normalize = a.size() > 1 && a[1].bool_value();
  return Value::Bool(kubeapi::Semver::Parse(a[0].string_value(), normalize).ok());
}
Value Major(const std::vector<Value>& a, EvalContext&) {
  return Value::Int(static_cast<int64_t>(a[0].semver().major));
}
Value Minor(const std::vector<Value>& a, EvalContext&) {
  return Value::Int(static_cast<int64_t>(a[0].semver().minor));
}
Value Patch(const std::vector<Value>& a, EvalContext&) {
  return Value::Int(static_cast<int64_t>(a[0].semver().patch));
}

// Order of two Semvers or two Quantities (the checker lets no other pair through).
int Order(const std::vector<Value>& a) {
  if (a[0].kind() == Kind::kSemver) return a[0].semver().Compare(a[1].semver());
  return a[0].quantity().Compare(a[1].quantity());
}
Value CompareTo(const std::vector<Value>& a, EvalContext&) { return Value::Int(Order(a)); }
Value IsGreaterThan(const std::vector<Value>& a, EvalContext&) { return Value::Bool(Order(a) > 0); }
Value IsLessThan(const std::vector<Value>& a, EvalContext&) { return Value::Bool(Order(a) < 0); }

// ---- Kubernetes' IP and CIDR libraries. ----

// ParseIP: `text` as an address, or the library's error: as netip parses it, without a zone and
// not an IPv4-mapped IPv6 address.
absl::StatusOr<GoAddr> ParseIP(const std::string& text) {
  absl::StatusOr<GoAddr> addr = GoAddr::Parse(text);
  if (!addr.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("IP Address ", GoQuote(text),
                     " parse error during conversion from string: ", addr.status().message()));
  }
  if (!addr->zone().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("IP address ", GoQuote(text), " with zone value is not allowed"));
  }
  if (addr->Is4In6()) {
    return absl::InvalidArgumentError(
        absl::StrCat("IPv4-mapped IPv6 address ", GoQuote(text), " is not allowed"));
  }
  return addr;
}
constexpr absl::string_view kCIDRParseError =
    "network address parse error during conversion from string: ";

// ParseCIDR: `text` as a prefix, or the library's error.
absl::StatusOr<GoPrefix> ParseCIDR(const std::string& text) {
  absl::StatusOr<GoPrefix> prefix = GoPrefix::Parse(text);
  if (!prefix.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(kCIDRParseError, prefix.status().message()));
  }
  if (prefix->addr().Is4In6()) {
    return absl::InvalidArgumentError(
        absl::StrCat("IPv4-mapped IPv6 address ", GoQuote(text), " is not allowed"));
  }
  return prefix;
}

// Parsing is a walk over the string; the accessors are nominal.
Value IPOf(const std::vector<Value>& a, EvalContext& c) {
  c.AddCost(StringCost(a[0].string_value()));
  absl::StatusOr<GoAddr> addr = ParseIP(a[0].string_value());
  if (!addr.ok()) return Err(std::string(addr.status().message()));
  return Value::IPOf(*std::move(addr));
}
Value IsIP(const std::vector<Value>& a, EvalContext& c) {
  c.AddCost(StringCost(a[0].string_value()));
  return Value::Bool(ParseIP(a[0].string_value()).ok());
}
Value IPIsCanonical(const std::vector<Value>& a, EvalContext& c) {
  c.AddCost(2 * StringCost(a[0].string_value()));
  absl::StatusOr<GoAddr> addr = ParseIP(a[0].string_value());
  if (!addr.ok()) return Err(std::string(addr.status().message()));
  return Value::Bool(addr->ToString() == a[0].string_value());
}
Value Family(const std::vector<Value>& a, EvalContext&) {
  return Value::Int(a[0].ip().Is4() ? 4 : 6);
}
Value IsUnspecified(const std::vector<Value>& a, EvalContext&) {
  return Value::Bool(a[0].ip().IsUnspecified());
}
Value IsLoopback(const std::vector<Value>& a, EvalContext&) {
  return Value::Bool(a[0].ip().IsLoopback());
}
Value IsLinkLocalMulticast(const std::vector<Value>& a, EvalContext&) {
  return Value::Bool(a[0].ip().IsLinkLocalMulticast());
}
Value IsLinkLocalUnicast(const std::vector<Value>& a, EvalContext&) {
  return Value::Bool(a[0].ip().IsLinkLocalUnicast());
}
Value IsGlobalUnicast(const std::vector<Value>& a, EvalContext&) {
  return Value::Bool(a[0].ip().IsGlobalUnicast());
}
// CIDRFromString: cidr(text), whose error upstream prefixes once more than ParseCIDR's.
Value CIDRFromString(const std::string& text, EvalContext& c) {
  c.AddCost(StringCost(text));
  absl::StatusOr<GoPrefix> prefix = ParseCIDR(text);
  if (!prefix.ok()) return Err(absl::StrCat(kCIDRParseError, prefix.status().message()));
  return Value::CIDROf(*std::move(prefix));
}
Value CIDROf(const std::vector<Value>& a, EvalContext& c) {
  return CIDRFromString(a[0].string_value(), c);
}
Value IsCIDR(const std::vector<Value>& a, EvalContext& c) {
  c.AddCost(StringCost(a[0].string_value()));
  return Value::Bool(ParseCIDR(a[0].string_value()).ok());
}
// containsIP and containsCIDR with a string: upstream parses it and passes the result on, so a
// string that is not an address gives "no such overload", not the parse error.
Value ContainsIP(const std::vector<Value>& a, EvalContext& c) {
  if (a[1].kind() == Kind::kIP) return Value::Bool(a[0].cidr().Contains(a[1].ip()));
  c.AddCost(StringCost(a[1].string_value()));
  absl::StatusOr<GoAddr> addr = ParseIP(a[1].string_value());
  if (!addr.ok()) return Err("no such overload");
  return Value::Bool(a[0].cidr().Contains(*addr));
}
Value ContainsCIDR(const std::vector<Value>& a, EvalContext& c) {
  const GoPrefix& outer = a[0].cidr();
  auto contains = [&outer](const GoPrefix& inner) {
    return Value::Bool(outer.Overlaps(inner) && outer.bits() <= inner.bits());
  };
  if (a[1].kind() == Kind::kCIDR) return contains(a[1].cidr());
  const Value inner = CIDRFromString(a[1].string_value(), c);
  return inner.is_error() ? inner : contains(inner.cidr());
}
Value CIDRAddress(const std::vector<Value>& a, EvalContext&) {
  return Value::IPOf(a[0].cidr().addr());
}
Value PrefixLength(const std::vector<Value>& a, EvalContext&) {
  return Value::Int(a[0].cidr().bits());
}
Value Masked(const std::vector<Value>& a, EvalContext&) {
  return Value::CIDROf(a[0].cidr().Masked());
}

// ---- Kubernetes' URL library. ----

// ParseURL: `text` as Kubernetes' url() takes it: an absolute URL or an absolute path (Go's
// ParseRequestURI), kept as url.Parse reads it (a fragment after '#').
absl::StatusOr<GoURL> ParseURL(const std::string& text) {
  absl::StatusOr<GoURL> url = GoURL::ParseRequestURI(text);
  if (url.ok()) url = GoURL::Parse(text);
  if (!url.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("URL parse error during conversion from string: ", url.status().message()));
  }
  return url;
}

// Parsing is a walk over the string; the accessors are nominal, as upstream counts them.
Value URLOf(const std::vector<Value>& a, EvalContext& c) {
  c.AddCost(StringCost(a[0].string_value()));
  absl::StatusOr<GoURL> url = ParseURL(a[0].string_value());
  if (!url.ok()) return Err(std::string(url.status().message()));
  return Value::URLOf(*std::move(url));
}
Value IsURL(const std::vector<Value>& a, EvalContext& c) {
  c.AddCost(StringCost(a[0].string_value()));
  return Value::Bool(GoURL::ParseRequestURI(a[0].string_value()).ok());
}
Value GetScheme(const std::vector<Value>& a, EvalContext&) {
  return Value::String(a[0].url().scheme);
}
Value GetHost(const std::vector<Value>& a, EvalContext&) { return Value::String(a[0].url().host); }
Value GetHostname(const std::vector<Value>& a, EvalContext&) {
  return Value::String(a[0].url().Hostname());
}
Value GetPort(const std::vector<Value>& a, EvalContext&) {
  return Value::String(a[0].url().Port());
}
Value GetEscapedPath(const std::vector<Value>& a, EvalContext&) {
  return Value::String(a[0].url().EscapedPath());
}
// getQuery: each key of the query with the list of its values, unescaped.
Value GetQuery(const std::vector<Value>& a, EvalContext&) {
  Map query;
  for (auto& [key, values] : a[0].url().Query()) {
    List items;
    items.reserve(values.size());
    for (std::string& value : values) items.push_back(Value::String(std::move(value)));
    query.entries.emplace_back(Value::String(key), Value::ListOf(std::move(items)));
  }
  return Value::MapOf(std::move(query));
}

// ---- Kubernetes' format library. ----

// NamedFormatValue: format.<name>(), the format at `index`.
template <size_t index>
Value NamedFormatValue(const std::vector<Value>&, EvalContext&) {
  return Value::FormatOf(NamedFormatAt(index));
}
Value FormatNamed(const std::vector<Value>& a, EvalContext&) {
  const NamedFormat* format = FindNamedFormat(a[0].string_value());
  return Value::OptionalOf(format == nullptr ? std::nullopt
                                             : std::optional<Value>(Value::FormatOf(*format)));
}
// validate: none for a value that has the format, else the list of what is wrong with it. Its
// cost is upstream's for a regular expression of the format's size over the value: ceil((1 +
// code points) / 10) times ceil(size / 4).
Value Validate(const std::vector<Value>& a, EvalContext& c) {
  const std::string& value = a[1].string_value();
  const auto length = static_cast<uint64_t>(CodePoints(value));
  c.AddCost((length + 10) / 10 * ((a[0].format().regex_size + 3) / 4));
  std::vector<std::string> messages = a[0].format().validate(value);
  if (messages.empty()) return Value::OptionalOf(std::nullopt);
  List items;
  for (std::string& message : messages) items.push_back(Value::String(std::move(message)));
  return Value::OptionalOf(Value::ListOf(std::move(items)));
}

// ---- Kubernetes' Quantity library. ----

Value QuantityOf(const std::vector<Value>& a, EvalContext&) {
  absl::StatusOr<kubeapi::Quantity> quantity = kubeapi::Quantity::Parse(a[0].string_value());
  if (!quantity.ok()) return Err(std::string(quantity.status().message()));
  return Value::QuantityOf(*quantity);
}
Value IsQuantity(const std::vector<Value>& a, EvalContext&) {
  return Value::Bool(kubeapi::Quantity::Parse(a[0].string_value()).ok());
}
Value Sign(const std::vector<Value>& a, EvalContext&) { return Value::Int(a[0].quantity().Sign()); }
Value IsInteger(const std::vector<Value>& a, EvalContext&) {
  return Value::Bool(a[0].quantity().AsInt64().has_value());
}
Value AsInteger(const std::vector<Value>& a, EvalContext&) {
  const std::optional<int64_t> value = a[0].quantity().AsInt64();
  if (!value.has_value()) return Err("cannot convert value to integer");
  return Value::Int(*value);
}
Value AsApproximateFloat(const std::vector<Value>& a, EvalContext&) {
  return Value::Double(a[0].quantity().AsApproximateFloat());
}

kubeapi::Quantity AsQuantity(const Value& v) {
  return v.kind() == Kind::kInt ? kubeapi::Quantity::FromInt64(v.int_value()) : v.quantity();
}
Value QuantityAdd(const std::vector<Value>& a, EvalContext&) {
  absl::StatusOr<kubeapi::Quantity> sum = a[0].quantity().Add(AsQuantity(a[1]));
  if (!sum.ok()) return Err(std::string(sum.status().message()));
  return Value::QuantityOf(*sum);
}
Value QuantitySub(const std::vector<Value>& a, EvalContext&) {
  absl::StatusOr<kubeapi::Quantity> difference = a[0].quantity().Sub(AsQuantity(a[1]));
  if (!difference.ok()) return Err(std::string(difference.status().message()));
  return Value::QuantityOf(*difference);
}

// ---- Optional values. ----

bool IsZero(const Value& v) {
  switch (v.kind()) {
    case Kind::kNull:
      return true;
    case Kind::kBool:
      return !v.bool_value();
    case Kind::kInt:
      return v.int_value() == 0;
    case Kind::kUint:
      return v.uint_value() == 0;
    case Kind::kDouble:
      return v.double_value() == 0;
    case Kind::kString:
      return v.string_value().empty();
    case Kind::kBytes:
      return v.bytes_value().empty();
    case Kind::kList:
      return v.list().empty();
    case Kind::kMap:
      return v.map().entries.empty();
    default:
      return false;
  }
}

Value OptionalOfValue(const std::vector<Value>& a, EvalContext&) { return Value::OptionalOf(a[0]); }
Value OptionalOfNonZero(const std::vector<Value>& a, EvalContext&) {
  return IsZero(a[0]) ? Value::OptionalOf(std::nullopt) : Value::OptionalOf(a[0]);
}
Value OptionalNone(const std::vector<Value>&, EvalContext&) {
  return Value::OptionalOf(std::nullopt);
}
Value HasValue(const std::vector<Value>& a, EvalContext&) {
  return Value::Bool(a[0].optional_value() != nullptr);
}
Value OptionalValue(const std::vector<Value>& a, EvalContext&) {
  if (a[0].optional_value() == nullptr) return Err("optional.none() dereference");
  return *a[0].optional_value();
}
Value OrValue(const std::vector<Value>& a, EvalContext&) {
  return a[0].optional_value() != nullptr ? *a[0].optional_value() : a[1];
}
Value Or(const std::vector<Value>& a, EvalContext&) {
  return a[0].optional_value() != nullptr ? a[0] : a[1];
}

// ---- Kubernetes' list library and cel-go's sets extension. ----

// isSorted, min and max pass over two items that are not ordered against each other (a NaN, or
// items of different types in a list of dyn) as if they were in order, as Kubernetes' list
// library does with the error of their comparison; an item of a type without an order (a list,
// a map, null, a Semver) is "no such overload", as there.

// Ordered: a value of a type with an order (cel-go's Comparer types within the subset).
bool Ordered(const Value& v) {
  switch (v.kind()) {
    case Kind::kInt:
    case Kind::kUint:
    case Kind::kDouble:
    case Kind::kBool:
    case Kind::kString:
    case Kind::kBytes:
      return true;
    default:
      return false;
  }
}

Value IsSorted(const std::vector<Value>& a, EvalContext& c) {
  const List& list = a[0].list();
  c.AddCost(list.size());
  if (!std::all_of(list.begin(), list.end(), Ordered)) return Err("no such overload");
  for (size_t i = 1; i < list.size(); ++i) {
    if (Compare(list[i - 1], list[i]).value_or(0) > 0) return Value::Bool(false);
  }
  return Value::Bool(true);
}

// Sum: `zero` (of the overload's type) for an empty list; else the items added in turn.
Value Sum(const std::vector<Value>& a, EvalContext& c, Value zero) {
  const List& list = a[0].list();
  c.AddCost(list.size());
  if (list.empty()) return zero;
  // Kubernetes declares sum on lists of numbers (and durations) only: a list of strings or
  // lists has no sum, and adding them would build values nothing paid for.
  for (const Value& item : list) {
    if (item.kind() != Kind::kInt && item.kind() != Kind::kUint && item.kind() != Kind::kDouble) {
      return Err(absl::StrCat("no such overload: sum(list(", item.TypeName(), "))"));
    }
  }
  Value total = list.front();
  for (size_t i = 1; i < list.size() && !total.is_error(); ++i) {
    total = Arithmetic({total, list[i]}, '+');
  }
  return total;
}
Value SumInt(const std::vector<Value>& a, EvalContext& c) { return Sum(a, c, Value::Int(0)); }
Value SumUint(const std::vector<Value>& a, EvalContext& c) { return Sum(a, c, Value::Uint(0)); }
Value SumDouble(const std::vector<Value>& a, EvalContext& c) { return Sum(a, c, Value::Double(0)); }

// Extreme: the first item no other is `wanted` of (-1: smaller, for min; 1: larger, for max).
Value Extreme(const std::vector<Value>& a, EvalContext& c, int wanted, const char* name) {
  const List& list = a[0].list();
  c.AddCost(list.size());
  if (!std::all_of(list.begin(), list.end(), Ordered)) return Err("no such overload");
  if (list.empty()) return Err(absl::StrCat(name, " called on empty list"));
  const Value* best = &list.front();
  for (size_t i = 1; i < list.size(); ++i) {
    if (Compare(list[i], *best) == wanted) best = &list[i];
  }
  return *best;
}
Value Min(const std::vector<Value>& a, EvalContext& c) { return Extreme(a, c, -1, "min"); }
Value Max(const std::vector<Value>& a, EvalContext& c) { return Extreme(a, c, 1, "max"); }

// IndexOfItem: the first (or last) index of an item equal to a[1]; -1 when none is.
Value IndexOfItem(const std::vector<Value>& a, EvalContext& c, bool last) {
  const List& list = a[0].list();
  c.AddCost(list.size());
  for (size_t k = 0; k < list.size(); ++k) {
    const size_t i = last ? list.size() - 1 - k : k;
    const Value equal = Compare(list[i], a[1], c);
    if (!equal.is_error() && equal.bool_value()) return Value::Int(static_cast<int64_t>(i));
  }
  return Value::Int(-1);
}
Value ListIndexOf(const std::vector<Value>& a, EvalContext& c) { return IndexOfItem(a, c, false); }
Value ListLastIndexOf(const std::vector<Value>& a, EvalContext& c) {
  return IndexOfItem(a, c, true);
}

// ---- cel-go's lists extension, version 3 as Kubernetes enables it. ----

// PayListCall: what cel-go's lists extension charges for a call that builds a list: `factor`
// for each of `size` items handled, one for the call and ten for the list it creates. Charged
// before the work, so that the limit also bounds what the call builds.
bool PayListCall(double factor, double size, EvalContext& c) {
  constexpr double kMaximum = static_cast<double>(std::numeric_limits<uint64_t>::max() / 2);
  return c.AddCost(static_cast<uint64_t>(std::min(factor * size, kMaximum)) + 11);
}

Value ListReverse(const std::vector<Value>& a, EvalContext& c) {
  const List& list = a[0].list();
  if (!PayListCall(1, list.size(), c)) return Err(c.StopReason());
  return Value::ListOf(List(list.rbegin(), list.rend()));
}

Value ListSlice(const std::vector<Value>& a, EvalContext& c) {
  const List& list = a[0].list();
  const int64_t start = a[1].int_value();
  const int64_t end = a[2].int_value();
  const std::string call = absl::StrCat("cannot slice(", start, ", ", end, "), ");
  if (start < 0 || end < 0) return Err(call + "negative indexes not supported");
  if (start > end) return Err(call + "start index must be less than or equal to end index");
  if (static_cast<uint64_t>(end) > list.size()) {
    return Err(absl::StrCat(call, "list is length ", list.size()));
  }
  if (!PayListCall(1, static_cast<double>(end - start), c)) return Err(c.StopReason());
  return Value::ListOf(List(list.begin() + start, list.begin() + end));
}

Value ListsRange(const std::vector<Value>& a, EvalContext& c) {
  const int64_t n = std::max<int64_t>(a[0].int_value(), 0);
  if (!PayListCall(1, static_cast<double>(n), c)) return Err(c.StopReason());
  List range;
  range.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) range.push_back(Value::Int(i));
  return Value::ListOf(std::move(range));
}

// Flatten `list` `depth` levels into `out`, one cost a value placed or opened: lists shared many
// times over are cheap to build and can flatten into more values than any evaluation could hold.
bool FlattenInto(const List& list, int64_t depth, List& out, EvalContext& c) {
  for (const Value& item : list) {
    if (!c.AddCost(1)) return false;
    if (item.kind() == Kind::kList && depth > 0) {
      if (!FlattenInto(item.list(), depth - 1, out, c)) return false;
    } else {
      out.push_back(item);
    }
  }
  return true;
}
Value ListFlatten(const std::vector<Value>& a, EvalContext& c) {
  const int64_t depth = a.size() > 1 ? a[1].int_value() : 1;
  if (depth < 0) return Err("level must be non-negative");
  if (!PayListCall(static_cast<double>(depth), a[0].list().size(), c)) {
    return Err(c.StopReason());
  }
  List flat;
  if (!FlattenInto(a[0].list(), depth, flat, c)) return Err(c.StopReason());
  return Value::ListOf(std::move(flat));
}

// Distinct: the first of each set of equal items, in order (1 and 1.0 are equal).
Value ListDistinct(const std::vector<Value>& a, EvalContext& c) {
  const List& list = a[0].list();
  const double n = static_cast<double>(list.size());
  if (!PayListCall(2, n * n, c)) return Err(c.StopReason());
  List unique;
  for (const Value& item : list) {
    bool seen = false;
    for (const Value& kept : unique) {
      Value equal = Compare(item, kept, c);
      if (c.stopped()) return Err(c.StopReason());
      if (!equal.is_error() && equal.bool_value()) {
        seen = true;
        break;
      }
    }
    if (!seen) unique.push_back(item);
  }
  return Value::ListOf(std::move(unique));
}

}  // namespace

Value SortByKeys(const Value& list, const Value& keys, EvalContext& c) {
  const List& items = list.list();
  const List& order = keys.list();
  if (items.size() != order.size()) {
    return Err(
        absl::StrCat("@sortByAssociatedKeys() expected a list of the same size as the "
                     "associated keys list, but got ",
                     items.size(), " and ", order.size(), " elements respectively"));
  }
  if (items.empty()) return list;
  const Kind kind = order[0].kind();
  if (kind != Kind::kInt && kind != Kind::kUint && kind != Kind::kDouble && kind != Kind::kBool &&
      kind != Kind::kString && kind != Kind::kBytes) {
    return Err("list elements must be comparable");
  }
  for (const Value& key : order) {
    if (key.kind() != kind) return Err("list elements must have the same type");
    // cel-go's sort treats NaN as neither before nor after anything, which orders nothing.
    if (kind == Kind::kDouble && std::isnan(key.double_value())) {
      return Err("NaN values cannot be ordered");
    }
  }
  const double n = static_cast<double>(items.size());
  const double factor = kind == Kind::kString || kind == Kind::kBytes ? 2.1 : 2;
  if (!PayListCall(factor, n * n, c)) return Err(c.StopReason());
  std::vector<size_t> indexes(items.size());
  for (size_t i = 0; i < indexes.size(); ++i) indexes[i] = i;
  std::stable_sort(indexes.begin(), indexes.end(), [&order](size_t x, size_t y) {
    return Compare(order[x], order[y]).value_or(0) < 0;
  });
  List sorted;
  sorted.reserve(items.size());
  for (size_t i : indexes) sorted.push_back(items[i]);
  return Value::ListOf(std::move(sorted));
}

namespace {

Value ListSort(const std::vector<Value>& a, EvalContext& c) { return SortByKeys(a[0], a[0], c); }

// Contained: every item of `inner` is in `outer`.
bool Contained(const List& outer, const List& inner, EvalContext& c) {
  for (const Value& item : inner) {
    if (!Holds(outer, item, c)) return false;
  }
  return true;
}
Value SetsContains(const std::vector<Value>& a, EvalContext& c) {
  if (!c.AddCost(a[0].list().size() * a[1].list().size())) {
    return Err(c.StopReason());
  }
  return Value::Bool(Contained(a[0].list(), a[1].list(), c));
}
Value SetsEquivalent(const std::vector<Value>& a, EvalContext& c) {
  if (!c.AddCost(2 * a[0].list().size() * a[1].list().size())) {
    return Err(c.StopReason());
  }
  return Value::Bool(Contained(a[0].list(), a[1].list(), c) &&
                     Contained(a[1].list(), a[0].list(), c));
}
Value SetsIntersects(const std::vector<Value>& a, EvalContext& c) {
  if (!c.AddCost(a[0].list().size() * a[1].list().size())) {
    return Err(c.StopReason());
  }
  for (const Value& item : a[0].list()) {
    if (Holds(a[1].list(), item, c)) return Value::Bool(true);
  }
  return Value::Bool(false);
}

// ---- DRA. ----

Value Includes(const std::vector<Value>& a, EvalContext& c) {
  if (a[0].kind() != Kind::kList) return Compare(a[0], a[1], c);
  c.AddCost(a[0].list().size());
  size_t seen = 0;
  for (const Value& item : a[0].list()) {
    if (seen++ >= kMaxAttributeValues) {
      return Err(absl::StrCat("'includes' function cannot be applied to lists longer than ",
                              kMaxAttributeValues, " values"));
    }
    Value equal = Compare(item, a[1], c);
    if (!equal.is_error() && equal.bool_value()) return Value::Bool(true);
  }
  return Value::Bool(false);
}

Type T(TK kind) { return Type::Of(kind); }

// AddNamedFormats: format.<name>() for each named format.
template <size_t... index>
void AddNamedFormats(std::vector<Overload>& all, std::index_sequence<index...>) {
  (all.push_back(
       {NamedFormatAt(index).function, false, {}, T(TK::kFormat), NamedFormatValue<index>}),
   ...);
}

std::vector<Overload> Build() {
  const Type dyn = Type::Dyn();
  const Type b = T(TK::kBool);
  const Type i = T(TK::kInt);
  const Type u = T(TK::kUint);
  const Type d = T(TK::kDouble);
  const Type s = T(TK::kString);
  const Type by = T(TK::kBytes);
  const Type sv = T(TK::kSemver);
  const Type q = T(TK::kQuantity);
  const Type ip = T(TK::kIP);
  const Type cidr = T(TK::kCIDR);
  const Type url = T(TK::kURL);
  const Type list = Type::ListOf(dyn);
  const Type map = Type::MapOf(dyn, dyn);
  const Type optional = Type::OptionalOf(dyn);
  // Type parameters, where cel-go declares them: the arguments in these places agree.
  const Type a = Type::Param();
  const Type list_a = Type::ListOf(a);
  const Type optional_a = Type::OptionalOf(a);
  std::vector<Overload> all = {
      {"!_", false, {b}, b, Not},
      {"-_", false, {i}, i, Negate},
      {"-_", false, {d}, d, Negate},
      {"_==_", false, {a, a}, b, Equal},
      {"_!=_", false, {a, a}, b, NotEqual},
      {"@in", false, {a, list_a}, b, In},
      {"@in", false, {a, Type::MapOf(a, dyn)}, b, In},
      {"size", false, {s}, i, Size},
      {"size", false, {by}, i, Size},
      {"size", false, {list}, i, Size},
      {"size", false, {map}, i, Size},
      {"size", true, {s}, i, Size},
      {"size", true, {by}, i, Size},
      {"size", true, {list}, i, Size},
      {"size", true, {map}, i, Size},
      {"int", false, {i}, i, ToInt},
      {"int", false, {u}, i, ToInt},
      {"int", false, {d}, i, ToInt},
      {"int", false, {s}, i, ToInt},
      {"uint", false, {u}, u, ToUint},
      {"uint", false, {i}, u, ToUint},
      {"uint", false, {d}, u, ToUint},
      {"uint", false, {s}, u, ToUint},
      {"double", false, {d}, d, ToDouble},
      {"double", false, {i}, d, ToDouble},
      {"double", false, {u}, d, ToDouble},
      {"double", false, {s}, d, ToDouble},
      {"string", false, {s}, s, ToString},
      {"string", false, {i}, s, ToString},
      {"string", false, {u}, s, ToString},
      {"string", false, {d}, s, ToString},
      {"string", false, {b}, s, ToString},
      {"string", false, {by}, s, ToString},
      {"string", false, {ip}, s, ToString},
      {"string", false, {cidr}, s, ToString},
      {"bytes", false, {by}, by, ToBytes},
      {"bytes", false, {s}, by, ToBytes},
      {"bool", false, {b}, b, ToBool},
      {"bool", false, {s}, b, ToBool},
      {"dyn", false, {dyn}, dyn, Dyn},
      {"type", false, {dyn}, T(TK::kType), TypeOfValue},
      {"contains", true, {s, s}, b, Contains},
      {"startsWith", true, {s, s}, b, StartsWith},
      {"endsWith", true, {s, s}, b, EndsWith},
      {"matches", true, {s, s}, b, Matches},
      {"matches", false, {s, s}, b, Matches},
      {"find", true, {s, s}, s, Find},
      {"findAll", true, {s, s}, Type::ListOf(s), FindAll},
      {"findAll", true, {s, s, i}, Type::ListOf(s), FindAll},
      {"charAt", true, {s, i}, s, CharAt},
      {"indexOf", true, {s, s}, i, IndexOf},
      {"indexOf", true, {s, s, i}, i, IndexOf},
      {"lastIndexOf", true, {s, s}, i, LastIndexOf},
      {"lastIndexOf", true, {s, s, i}, i, LastIndexOf},
      {"lowerAscii", true, {s}, s, LowerAscii},
      {"upperAscii", true, {s}, s, UpperAscii},
      {"replace", true, {s, s, s}, s, Replace},
      {"replace", true, {s, s, s, i}, s, Replace},
      {"split", true, {s, s}, Type::ListOf(s), Split},
      {"split", true, {s, s, i}, Type::ListOf(s), Split},
      {"substring", true, {s, i}, s, Substring},
      {"substring", true, {s, i, i}, s, Substring},
      {"trim", true, {s}, s, Trim},
      {"strings.quote", false, {s}, s, Quote},
      {"format", true, {s, list}, s, StringFormat},
      {"join", true, {Type::ListOf(s)}, s, Join},
      {"join", true, {Type::ListOf(s), s}, s, Join},
      {"semver", false, {s}, sv, SemverOf},
      {"semver", false, {s, b}, sv, SemverOf},
      {"isSemver", false, {s}, b, IsSemver},
      {"isSemver", false, {s, b}, b, IsSemver},
      {"major", true, {sv}, i, Major},
      {"minor", true, {sv}, i, Minor},
      {"patch", true, {sv}, i, Patch},
      {"compareTo", true, {sv, sv}, i, CompareTo},
      {"isGreaterThan", true, {sv, sv}, b, IsGreaterThan},
      {"isLessThan", true, {sv, sv}, b, IsLessThan},
      {"quantity", false, {s}, q, QuantityOf},
      {"isQuantity", false, {s}, b, IsQuantity},
      {"sign", false, {q}, i, Sign},  // a function, as upstream declares it: sign(q)
      {"isInteger", true, {q}, b, IsInteger},
      {"asInteger", true, {q}, i, AsInteger},
      {"asApproximateFloat", true, {q}, d, AsApproximateFloat},
      {"add", true, {q, q}, q, QuantityAdd},
      {"add", true, {q, i}, q, QuantityAdd},
      {"sub", true, {q, q}, q, QuantitySub},
      {"sub", true, {q, i}, q, QuantitySub},
      {"compareTo", true, {q, q}, i, CompareTo},
      {"isGreaterThan", true, {q, q}, b, IsGreaterThan},
      {"isLessThan", true, {q, q}, b, IsLessThan},
      {"ip", false, {s}, ip, IPOf},
      {"isIP", false, {s}, b, IsIP},
      {"ip.isCanonical", false, {s}, b, IPIsCanonical},
      {"family", true, {ip}, i, Family},
      {"isUnspecified", true, {ip}, b, IsUnspecified},
      {"isLoopback", true, {ip}, b, IsLoopback},
      {"isLinkLocalMulticast", true, {ip}, b, IsLinkLocalMulticast},
      {"isLinkLocalUnicast", true, {ip}, b, IsLinkLocalUnicast},
      {"isGlobalUnicast", true, {ip}, b, IsGlobalUnicast},
      {"cidr", false, {s}, cidr, CIDROf},
      {"isCIDR", false, {s}, b, IsCIDR},
      {"containsIP", true, {cidr, s}, b, ContainsIP},
      {"containsIP", true, {cidr, ip}, b, ContainsIP},
      {"containsCIDR", true, {cidr, s}, b, ContainsCIDR},
      {"containsCIDR", true, {cidr, cidr}, b, ContainsCIDR},
      {"ip", true, {cidr}, ip, CIDRAddress},
      {"prefixLength", true, {cidr}, i, PrefixLength},
      {"masked", true, {cidr}, cidr, Masked},
      {"url", false, {s}, url, URLOf},
      {"isURL", false, {s}, b, IsURL},
      {"getScheme", true, {url}, s, GetScheme},
      {"getHost", true, {url}, s, GetHost},
      {"getHostname", true, {url}, s, GetHostname},
      {"getPort", true, {url}, s, GetPort},
      {"getEscapedPath", true, {url}, s, GetEscapedPath},
      {"getQuery", true, {url}, Type::MapOf(s, Type::ListOf(s)), GetQuery},
      {"format.named", false, {s}, Type::OptionalOf(T(TK::kFormat)), FormatNamed},
      {"validate", true, {T(TK::kFormat), s}, Type::OptionalOf(Type::ListOf(s)), Validate},
      {"optional.of", false, {dyn}, optional, OptionalOfValue},
      {"optional.ofNonZeroValue", false, {dyn}, optional, OptionalOfNonZero},
      {"optional.none", false, {}, optional, OptionalNone},
      {"hasValue", true, {optional}, b, HasValue},
      {"value", true, {optional}, dyn, OptionalValue},
      {"orValue", true, {optional_a, a}, dyn, OrValue},
      {"or", true, {optional_a, optional_a}, optional, Or},
      {"includes", true, {dyn, dyn}, b, Includes, Feature::kListTypeAttributes},
      {"indexOf", true, {list_a, a}, i, ListIndexOf},
      {"lastIndexOf", true, {list_a, a}, i, ListLastIndexOf},
      {"reverse", true, {list_a}, list, ListReverse},
      {"slice", true, {list_a, i, i}, list, ListSlice},
      {"flatten", true, {Type::ListOf(list)}, list, ListFlatten},
      {"flatten", true, {list, i}, list, ListFlatten},
      {"distinct", true, {list_a}, list, ListDistinct},
      {"lists.range", false, {i}, Type::ListOf(i), ListsRange},
      {"sets.contains", false, {list_a, list_a}, b, SetsContains},
      {"sets.equivalent", false, {list_a, list_a}, b, SetsEquivalent},
      {"sets.intersects", false, {list_a, list_a}, b, SetsIntersects},
  };
  // Ordering and arithmetic: every pair of numbers, and the types with an order of their own.
  using Named = std::pair<const char*, FunctionImpl>;
  for (const auto& [name, impl] : {Named{"_<_", Less}, Named{"_<=_", LessEqual},
                                   Named{"_>_", Greater}, Named{"_>=_", GreaterEqual}}) {
    for (const Type& x : {i, u, d}) {
      for (const Type& y : {i, u, d}) all.push_back({name, false, {x, y}, b, impl});
    }
    for (const Type& t : {s, by, b}) all.push_back({name, false, {t, t}, b, impl});
  }
  // Kubernetes' isSorted, min and max, and cel-go's sort(), are declared for lists of each type
  // with an order, sum for lists of numbers; sortBy is a macro (interpreter.cc).
  for (const Type& t : {i, u, d, b, s, by}) {
    all.push_back({"isSorted", true, {Type::ListOf(t)}, b, IsSorted});
    all.push_back({"min", true, {Type::ListOf(t)}, t, Min});
    all.push_back({"max", true, {Type::ListOf(t)}, t, Max});
    all.push_back({"sort", true, {Type::ListOf(t)}, Type::ListOf(t), ListSort});
  }
  all.push_back({"sum", true, {Type::ListOf(i)}, i, SumInt});
  all.push_back({"sum", true, {Type::ListOf(u)}, u, SumUint});
  all.push_back({"sum", true, {Type::ListOf(d)}, d, SumDouble});
  for (const Type& t : {i, u, d, s, by}) all.push_back({"_+_", false, {t, t}, t, Add});
  all.push_back({"_+_", false, {list_a, list_a}, list, Add});
  for (const auto& [name, impl] :
       {Named{"_-_", Subtract}, Named{"_*_", Multiply}, Named{"_/_", Divide}}) {
    for (const Type& t : {i, u, d}) all.push_back({name, false, {t, t}, t, impl});
  }
  for (const Type& t : {i, u}) all.push_back({"_%_", false, {t, t}, t, Modulo});
  AddNamedFormats(all, std::make_index_sequence<kNamedFormatCount>());
  return all;
}

// WithPythonNamedGroups: `pattern` with each named group written (?<name>re), which Go's regexp
// takes since Go 1.22 and Debian 12's RE2 does not, written (?P<name>re), which both take.
// Escaped characters and character classes are left as they are.
std::string WithPythonNamedGroups(const std::string& pattern) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    out += pattern[i];
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      out += pattern[++i];
    } else if (in_class) {
      in_class = pattern[i] != ']';
    } else if (pattern[i] == '[') {
      in_class = true;
      // A ']' first in a class (after a '^') is one of its characters.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
    } else if (pattern.compare(i, 3, "(?<") == 0 && i + 3 < pattern.size() &&
               pattern[i + 3] != '=' && pattern[i + 3] != '!') {
      out += "?P<";
      i += 2;
    }
  }
  return out;
}

// HasByteEscape: `pattern` has \C (any byte), which RE2 has and Go's regexp does not; a \C
// between \Q and \E is the two characters.
bool HasByteEscape(const std::string& pattern) {
  for (size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '\\') continue;
    if (pattern[i + 1] == 'C') return true;
    if (pattern[i + 1] == 'Q') {
      const size_t end = pattern.find("\\E", i + 2);
      if (end == std::string::npos) return false;
      i = end;
    }
    ++i;  // the escaped character
  }
  return false;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const re2::RE2>> CompileRegex(const std::string& pattern) {
  if (HasByteEscape(pattern)) {
    return absl::InvalidArgumentError("error parsing regexp: invalid escape sequence: `\\C`");
  }
  re2::RE2::Options options;
  options.set_log_errors(false);
  auto regex = std::make_shared<const re2::RE2>(WithPythonNamedGroups(pattern), options);
  if (regex->ok()) return regex;
  // RE2's error codes, as Go's regexp/syntax names them.
  const char* code = "regexp/syntax: internal error";
  switch (regex->error_code()) {
    case re2::RE2::ErrorBadEscape:
      code = "invalid escape sequence";
      break;
    case re2::RE2::ErrorBadCharClass:
      code = "invalid character class";
      break;
    case re2::RE2::ErrorBadCharRange:
      code = "invalid character class range";
      break;
    case re2::RE2::ErrorMissingBracket:
      code = "missing closing ]";
      break;
    case re2::RE2::ErrorMissingParen:
      code = "missing closing )";
      break;
    case re2::RE2::ErrorUnexpectedParen:
      code = "unexpected )";
      break;
    case re2::RE2::ErrorTrailingBackslash:
      code = "trailing backslash at end of expression";
      break;
    case re2::RE2::ErrorRepeatArgument:
      code = "missing argument to repetition operator";
      break;
    case re2::RE2::ErrorRepeatSize:
      code = "invalid repeat count";
      break;
    case re2::RE2::ErrorRepeatOp:
      code = "invalid nested repetition operator";
      break;
    case re2::RE2::ErrorBadPerlOp:
      code = "invalid or unsupported Perl syntax";
      break;
    case re2::RE2::ErrorBadUTF8:
      code = "invalid UTF-8";
      break;
    case re2::RE2::ErrorBadNamedCapture:
      code = "invalid named capture";
      break;
    case re2::RE2::ErrorPatternTooLarge:
      code = "expression too large";
      break;
    default:
      break;
  }
  // The text in error as the pattern has it, where it is a named group written (?<name>re).
  std::string arg = regex->error_arg();
  if (absl::StartsWith(arg, "(?P<") && !absl::StrContains(pattern, arg)) arg.erase(2, 1);
  return absl::InvalidArgumentError(absl::StrCat("error parsing regexp: ", code, ": `", arg, "`"));
}

absl::StatusOr<std::shared_ptr<const re2::RE2>> RegexCache::Get(const std::string& pattern) {
  absl::MutexLock lock(&mu_);
  auto found = compiled_.find(pattern);
  if (found != compiled_.end()) return found->second;
  absl::StatusOr<std::shared_ptr<const re2::RE2>> regex = CompileRegex(pattern);
  if (regex.ok()) compiled_.emplace(pattern, *regex);
  return regex;
}

void EvalContext::CheckInterruption() {
  if (interrupted_ != Stop::kNone) return;
  if (interruption_.cancelled != nullptr && interruption_.cancelled->load()) {
    interrupted_ = Stop::kCancelled;
  } else if (interruption_.deadline != absl::InfiniteFuture() &&
             absl::Now() >= interruption_.deadline) {
    interrupted_ = Stop::kDeadline;
  }
}

std::string EvalContext::StopReason() const {
  switch (stop()) {
    case Stop::kCancelled:
      return "operation interrupted: context canceled";
    case Stop::kDeadline:
      return "operation interrupted: context deadline exceeded";
    case Stop::kCostLimit:
      return "operation cancelled: actual cost limit exceeded";
    case Stop::kNone:
      break;
  }
  return "";
}

const std::vector<Overload>& Overloads() {
  static const std::vector<Overload> kAll = Build();
  return kAll;
}

bool Fits(const Type& param, const Value& value) {
  switch (param.kind) {
    case TK::kDyn:
    case TK::kAny:
    case TK::kParam:
      return true;
    case TK::kNull:
      return value.kind() == Kind::kNull;
    case TK::kBool:
      return value.kind() == Kind::kBool;
    case TK::kInt:
      return value.kind() == Kind::kInt;
    case TK::kUint:
      return value.kind() == Kind::kUint;
    case TK::kDouble:
      return value.kind() == Kind::kDouble;
    case TK::kString:
      return value.kind() == Kind::kString;
    case TK::kBytes:
      return value.kind() == Kind::kBytes;
    case TK::kList:
      return value.kind() == Kind::kList;
    case TK::kMap:
    case TK::kDevice:
      return value.kind() == Kind::kMap;
    case TK::kSemver:
      return value.kind() == Kind::kSemver;
    case TK::kQuantity:
      return value.kind() == Kind::kQuantity;
    case TK::kIP:
      return value.kind() == Kind::kIP;
    case TK::kCIDR:
      return value.kind() == Kind::kCIDR;
    case TK::kURL:
      return value.kind() == Kind::kURL;
    case TK::kFormat:
      return value.kind() == Kind::kFormat;
    case TK::kOptional:
      return value.kind() == Kind::kOptional;
    case TK::kType:
      return value.kind() == Kind::kType;
    case TK::kError:  // no overload's parameter
      break;
  }
  return false;
}

std::string GoTypeName(const Value& value) {
  switch (value.kind()) {
    case Kind::kNull:
      return "types.Null";
    case Kind::kBool:
      return "types.Bool";
    case Kind::kInt:
      return "types.Int";
    case Kind::kUint:
      return "types.Uint";
    case Kind::kDouble:
      return "types.Double";
    case Kind::kString:
      return "types.String";
    case Kind::kBytes:
      return "types.Bytes";
    case Kind::kSemver:
      return "cel.Semver";
    case Kind::kQuantity:
      return "cel.Quantity";
    case Kind::kIP:
      return "cel.IP";
    case Kind::kCIDR:
      return "cel.CIDR";
    case Kind::kURL:
      return "cel.URL";
    case Kind::kFormat:
      return "cel.Format";
    case Kind::kOptional:
      return "*types.Optional";
    default:
      return value.TypeName();
  }
}

}  // namespace devmgr::cel
