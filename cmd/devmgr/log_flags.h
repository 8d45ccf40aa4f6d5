// The logging flags of the commands that log (serve and the plugins), and the logger they make:
// klog's line format everywhere (common/logging.h), at the level of --log-level or of -v N, the
// kubelet's verbosity (0-2 info, 3-4 debug, 5 and more trace).
#pragma once

#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "common/logging.h"

namespace devmgr::cli {

struct LogFlags {
  std::string level = "info";
  bool level_given = false;
  int verbosity = 0;
  bool verbosity_given = false;
};

// AddLogFlags adds --log-level and -v/--v to `command`.
void AddLogFlags(CLI::App& command, LogFlags& flags);

// NewLogger: a logger called `name` writing to `sink` in klog's format, at the flags' level.
// InvalidArgument for an unknown --log-level, a negative -v, or both flags given.
absl::StatusOr<LoggerPtr> NewLogger(const LogFlags& flags, std::string name, spdlog::sink_ptr sink);

}  // namespace devmgr::cli
