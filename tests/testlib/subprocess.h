// RunProcess runs a program to completion, as a user would from a shell, and captures what it
// prints. For tests of the devmgr command line.
#pragma once

#include <string>
#include <vector>

namespace devmgr::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 if the process did not exit normally
  std::string out;
  std::string err;
};

// RunProcess runs argv[0] (a path) with `argv`, standard input from `input`. Aborts the test
// program if the process cannot be started.
ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& input = "");

// DevmgrBinary is the devmgr program under test, from the DEVMGR_BIN environment variable that
// the build sets.
std::string DevmgrBinary();

}  // namespace devmgr::testing
