#include "common/go_json.h"

#include <cstdint>

#include "common/utf8.h"

namespace devmgr {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Printable ASCII that Go writes as itself.
bool IsPlainAscii(uint8_t c) {
  return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&';
}

}  // namespace

std::string ToValidUtf8(absl::string_view s) {
  // Almost every string is valid; check before building a replacement.
  size_t valid = 0;
  while (valid < s.size()) {
    const size_t len = Utf8SequenceLength(s, valid);
    if (len == 0) break;
    valid += len;
  }
  if (valid == s.size()) return std::string(s);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t len = Utf8SequenceLength(s, i);
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
    const size_t len = Utf8SequenceLength(s, i);
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
