#include "common/go_quote.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace devmgr {
namespace {

// Go's unicode.IsPrint for a code point above ASCII, for the characters log lines carry: false
// for the C1 controls, the spaces other than ' ', the format characters, the line and paragraph
// separators, private use and noncharacters. (Go also refuses unassigned code points, which
// would need Unicode's tables; they are written as they are here.)
bool IsPrintAboveAscii(char32_t c) {
  static constexpr std::pair<char32_t, char32_t> kNotPrint[] = {
      {0x80, 0xA0},     {0xAD, 0xAD},       {0x600, 0x605},     {0x61C, 0x61C},
      {0x6DD, 0x6DD},   {0x70F, 0x70F},     {0x1680, 0x1680},   {0x180E, 0x180E},
      {0x2000, 0x200F}, {0x2028, 0x202F},   {0x205F, 0x2064},   {0x2066, 0x206F},
      {0x3000, 0x3000}, {0xE000, 0xF8FF},   {0xFDD0, 0xFDEF},   {0xFEFF, 0xFEFF},
      {0xFFF9, 0xFFFB}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F}, {0xF0000, 0x10FFFF}};
  for (const auto& [first, last] : kNotPrint) {
    if (c >= first && c <= last) return false;
  }
  return (c & 0xFFFE) != 0xFFFE;  // U+xFFFE and U+xFFFF of every plane are noncharacters
}

void AppendHex(std::string& out, uint32_t value, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) out += kHex[(value >> shift) & 0xF];
}

}  // namespace

std::string GoQuote(absl::string_view value) {
  std::string out = "\"";
  for (size_t i = 0; i < value.size();) {
    const size_t length = Utf8SequenceLength(value, i);
    if (length == 0) {  // a byte that is not UTF-8
      out += "\\x";
      AppendHex(out, static_cast<uint8_t>(value[i]), 2);
      ++i;
      continue;
    }
    const char32_t c = DecodeUtf8(value, i, length);
    const absl::string_view text = value.substr(i, length);
    i += length;
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\a':
        out += "\\a";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\v':
        out += "\\v";
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      AppendHex(out, c, 2);
    } else if (c < 0x80 || IsPrintAboveAscii(c)) {
      absl::StrAppend(&out, text);
    } else if (c < 0x10000) {
      out += "\\u";
      AppendHex(out, c, 4);
    } else {
      out += "\\U";
      AppendHex(out, c, 8);
    }
  }
  out += '"';
  return out;
}

}  // namespace devmgr
