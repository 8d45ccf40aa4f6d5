// BackgroundProcess: a program running beside a test (a plugin, a peer written in another
// language), with its output in files. The test signals it and waits for its exit; a process
// still running at the end is killed and reaped, so none outlives its test.
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
  // Starts argv[0] (a path) with `argv`; started() tells whether that worked.
  explicit BackgroundProcess(const std::vector<std::string>& argv);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  bool started() const { return pid_ > 0; }
  void Signal(int signal);

  // Wait returns the exit code once the process has ended within `timeout` (-1 if a signal
  // ended it), or nullopt while it still runs.
  std::optional<int> Wait(std::chrono::milliseconds timeout);

  // What it printed so far.
  std::string out() const;
  std::string err() const;

 private:
  TempDir dir_;
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

}  // namespace devmgr::testing
