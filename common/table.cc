#include "common/table.h"

#include <algorithm>

#include "common/go_quote.h"

namespace devmgr {
namespace {

// Characters: what a cell of valid UTF-8 (TerminalText's) takes on a line, one a code point.
size_t Characters(absl::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  }));
}

}  // namespace

std::string TerminalText(absl::string_view text) {
  std::string quoted = GoQuote(text);
  // What GoQuote makes of printable text: the text between quotes, with only its quotes and
  // backslashes escaped.
  std::string printable = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') printable += '\\';
    printable += c;
  }
  printable += '"';
  return quoted == printable ? std::string(text) : quoted;
}

void Table::AddRow(std::vector<std::string> row) {
  for (std::string& cell : row) cell = TerminalText(cell);
  rows_.push_back(std::move(row));
}

void Table::Print(std::ostream& out) const {
  std::vector<size_t> widths;
  for (const auto& row : rows_) {
    if (row.size() > widths.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], Characters(row[i]));
  }
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(widths[i] - Characters(row[i]) + 3, ' ');
    }
    out << line << '\n';
  }
}

}  // namespace devmgr
