// DisplayError: a compile error as cel-go shows it, so that a selector refused here reads as the
// API server's refusal of it ("compilation failed: " followed by this):
//   ERROR: <input>:1:10: undeclared reference to 'x' (in container '')
//    | device.x == 1 || x
//    | .........^
// The line and column of the position (the column counted in characters, from 1), the message,
// then the position's line of the text (tabs shown as spaces) and a caret under its character:
// one dot per character before it, a full-width dot for each character of more than one byte and
// a full-width caret under such a character, as cel-go draws them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace devmgr::cel {

// DisplayError: `message` about the character at byte `position` of `text`.
std::string DisplayError(absl::string_view text, size_t position, absl::string_view message);

// PlacedError: a message about the character at byte `position` of a text.
struct PlacedError {
  size_t position;
  std::string message;
};

// DisplayErrors: the errors as DisplayError shows each, one under the other, sorted by place
// (those at one place in the order given), as cel-go lists the errors of a check: of more than
// 100, the first 100 given, then how many more there were ("3 more errors were truncated").
std::string DisplayErrors(absl::string_view text, std::vector<PlacedError> errors);

// DisplayUnplacedError: `message` about the whole text, as cel-go shows an error it has no
// location for (line -1, column 0, no snippet).
std::string DisplayUnplacedError(absl::string_view message);

}  // namespace devmgr::cel
