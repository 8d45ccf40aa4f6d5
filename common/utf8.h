// UTF-8 as Go's unicode/utf8 reads it: overlong forms, surrogates and code points above
// U+10FFFF are not valid. Shared by the writers of Go's formats (JSON, klog lines) and the CEL
// evaluator.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace devmgr {

// Utf8SequenceLength: the length of the valid UTF-8 sequence that starts at s[i] (1 to 4), or
// 0 when none does. `i` must be within `s`.
size_t Utf8SequenceLength(absl::string_view s, size_t i);

// DecodeUtf8: the code point of the valid sequence of `length` bytes at s[i].
char32_t DecodeUtf8(absl::string_view s, size_t i, size_t length);

// FirstInvalidUtf8: the offset of the first byte of `s` that begins no valid sequence, or npos
// when all of `s` is valid UTF-8.
size_t FirstInvalidUtf8(absl::string_view s);

// ValidUtf8: whether all of `s` is valid UTF-8 (Go's utf8.ValidString).
bool ValidUtf8(absl::string_view s);

// Utf8CutPoint: where to cut `s` to keep at most its first `at` bytes without splitting a
// character: `at` stepped back to the first byte of the character it falls in. `at` must be
// below s.size().
size_t Utf8CutPoint(absl::string_view s, size_t at);

}  // namespace devmgr
