#include "common/utf8.h"

namespace devmgr {

size_t Utf8SequenceLength(absl::string_view s, size_t i) {
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

char32_t DecodeUtf8(absl::string_view s, size_t i, size_t length) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
  if (length == 1) return byte(0);
  // The lead byte keeps 7 - length bits; each continuation byte adds 6.
  char32_t code = byte(0) & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) code = (code << 6) | (byte(k) & 0x3F);
  return code;
}

size_t FirstInvalidUtf8(absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t length = Utf8SequenceLength(s, i);
    if (length == 0) return i;
    i += length;
  }
  return absl::string_view::npos;
}

bool ValidUtf8(absl::string_view s) { return FirstInvalidUtf8(s) == absl::string_view::npos; }

size_t Utf8CutPoint(absl::string_view s, size_t at) {
  while (at > 0 && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) --at;
  return at;
}

}  // namespace devmgr
