// Table prints aligned text columns, the way kubectl and crictl print their human output.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace devmgr {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}

  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  // Print writes every row, columns padded to the widest cell and separated by three spaces;
  // the last column is not padded.
  void Print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace devmgr
