#include "cel/error_display.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/go_json.h"
#include "common/utf8.h"

namespace devmgr::cel {
namespace {

// CharacterSize: the bytes of the character at s[i], and whether cel-go draws it wide: cel-go
// reads the text as Go's range loop does (a byte that starts no valid sequence is one character,
// U+FFFD) and draws wide every character of more than one byte in UTF-8, U+FFFD included.
struct Character {
  size_t size;
  bool wide;
};
Character CharacterAt(absl::string_view s, size_t i) {
  const size_t length = Utf8SequenceLength(s, i);
  return {length == 0 ? 1 : length, length != 1};
}

}  // namespace

std::string DisplayError(absl::string_view text, size_t position, absl::string_view message) {
  position = std::min(position, text.size());
  const size_t newline = position == 0 ? absl::string_view::npos : text.rfind('\n', position - 1);
  const size_t line_start = newline == absl::string_view::npos ? 0 : newline + 1;
  const size_t line_end = std::min(text.find('\n', position), text.size());
  const size_t line = 1 + std::count(text.begin(), text.begin() + line_start, '\n');

  std::string marker;
  size_t column = 0;
  for (size_t i = line_start; i < position; ++column) {
    const Character character = CharacterAt(text, i);
    absl::StrAppend(&marker, character.wide ? "\uff0e" : ".");
    i += character.size;
  }
  const bool wide_at = position < line_end && CharacterAt(text, position).wide;
  absl::StrAppend(&marker, wide_at ? "\uff3e" : "^");

  const std::string located = absl::StrCat("ERROR: <input>:", line, ":", column + 1, ": ", message);
  // cel-go shows no line of an empty text.
  if (text.empty()) return located;
  std::string snippet = ToValidUtf8(text.substr(line_start, line_end - line_start));
  std::replace(snippet.begin(), snippet.end(), '\t', ' ');
  return absl::StrCat(located, "\n | ", snippet, "\n | ", marker);
}

std::string DisplayErrors(absl::string_view text, std::vector<PlacedError> errors) {
  // cel-go's common.Errors keeps the first this many reported, then sorts what it kept.
  constexpr size_t kKept = 100;
  const size_t reported = errors.size();
  if (reported > kKept) errors.resize(kKept);
  std::stable_sort(errors.begin(), errors.end(), [](const PlacedError& a, const PlacedError& b) {
    return a.position < b.position;
  });
  std::vector<std::string> shown;
  for (const PlacedError& error : errors) {
    shown.push_back(DisplayError(text, error.position, error.message));
  }
  if (reported > kKept) {
    shown.push_back(absl::StrCat(reported - kKept, " more errors were truncated"));
  }
  return absl::StrJoin(shown, "\n");
}

std::string DisplayUnplacedError(absl::string_view message) {
  return absl::StrCat("ERROR: <input>:-1:0: ", message);
}

}  // namespace devmgr::cel
