// Programs run from tests, with what they print captured in files (never pipes, so nothing
// blocks on a full pipe whatever a program prints). RunProcess runs one to completion, as a user
// would from a shell: for tests of the devmgr command line. BackgroundProcess runs one beside the
// test (the daemon, a plugin, a peer written in another language); the test signals it and waits
// for its exit, and one still running at the end is killed and reaped, so none outlives its test.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tests/testlib/temp_dir.h"

namespace devmgr::testing {

class BackgroundProcess {
 public:
  // Starts argv[0] (a path) with `argv`, standard input from `input`; started() tells whether
  // that worked.
  explicit BackgroundProcess(const std::vector<std::string>& argv, const std::string& input = "");
  // Kills the process (SIGKILL) and reaps it if it still runs.
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  bool started() const { return pid_ > 0; }
  void Signal(int signal);

  // Wait returns the exit code once the process has ended within `timeout` (-1 if a signal
  // ended it), or nullopt while it still runs (or if it never started).
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // WaitForExit blocks until the process ends and returns Wait's exit code. Requires started().
  int WaitForExit();

  // What it printed so far.
  std::string out() const;
  std::string err() const;

 private:
  void Reaped(int status);

  TempDir dir_;
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

struct ProcessResult {
  int exit_code = -1;  // -1 if the process did not exit normally
  std::string out;
  std::string err;
};

// RunProcess runs argv[0] (a path) with `argv`, standard input from `input`, and waits for it to
// end. Aborts the test program (throws) if the process cannot be started.
ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& input = "");

// DevmgrBinary is the devmgr program under test, from the DEVMGR_BIN environment variable that
// the build sets.
std::string DevmgrBinary();

// RunDevmgr runs the devmgr program under test with `args` (its arguments, not argv[0]), as
// RunProcess does.
ProcessResult RunDevmgr(std::vector<std::string> args, const std::string& input = "");

}  // namespace devmgr::testing
