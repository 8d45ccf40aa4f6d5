// Table prints aligned text columns, the way kubectl and crictl print their human output.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace devmgr {

// TerminalText: `text` as human output shows it: as it is when it is printable UTF-8 (quotes and
// backslashes included), and otherwise quoted with Go's escapes (GoQuote), so that a control
// character that a plugin, a driver or a file put in a name (an escape sequence, a newline) is
// shown, not obeyed by the terminal, and cannot break a table's lines.
std::string TerminalText(absl::string_view text);

class Table {
 public:
  explicit Table(std::vector<std::string> header) { AddRow(std::move(header)); }

  // AddRow adds a row; each cell is shown as TerminalText.
  void AddRow(std::vector<std::string> row);

  // Print writes every row, columns padded to the widest cell (in characters) and separated by
  // three spaces; the last column is not padded.
  void Print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace devmgr
