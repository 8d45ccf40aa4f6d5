#include "common/go_json.h"

#include <cstdint>

namespace devmgr {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// ValidSequenceLength returns the length of the valid UTF-8 sequence that starts at s[i], or 0
// if none does (overlong forms, surrogates and code points above U+10FFFF are invalid, as in
// Go's unicode/utf8).
size_t ValidSequenceLength(absl::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t len = 0;
  uint8_t lo = 0x80;
  uint8_t hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlong forms
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  const uint8_t b1 = byte(i + 1);
  if (b1 < lo || b1 > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return len;
}

// Printable ASCII that Go writes as itself.
bool IsPlainAscii(uint8_t c) {
  return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&';
}

}  // namespace

std::string ToValidUtf8(absl::string_view s) {
  // Almost every string is valid; check before building a replacement.
  size_t valid = 0;
  while (valid < s.size()) {
    const size_t len = ValidSequenceLength(s, valid);
    if (len == 0) break;
    valid += len;
  }
  if (valid == s.size()) return std::string(s);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t len = ValidSequenceLength(s, i);
    if (len == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(s.data() + i, len);
      i += len;
    }
  }
  return out;
}

void AppendGoJsonString(std::string& out, absl::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (size_t i = 0; i < s.size();) {
    // Copy the longest run that needs no escaping in one go.
    size_t run = i;
    while (run < s.size() && IsPlainAscii(static_cast<uint8_t>(s[run]))) ++run;
    if (run > i) {
      out.append(s.data() + i, run - i);
      i = run;
      continue;
    }
    const auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    const size_t len = ValidSequenceLength(s, i);
    if (len == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    const absl::string_view seq = s.substr(i, len);
    if (seq == "\xE2\x80\xA8") {
      out += "\\u2028";
    } else if (seq == "\xE2\x80\xA9") {
      out += "\\u2029";
    } else {
      out.append(seq.data(), seq.size());
    }
    i += len;
  }
  out += '"';
}

}  // namespace devmgr
