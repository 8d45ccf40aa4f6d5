// What every devmgr subcommand shares: its exit codes and output format flag.
//
// The command-line contract (DESIGN.md): exit 0 on success, 1 when the answer is "no" (refused,
// mismatch, not found), 2 for bad usage or unreadable input, always with a one-line reason on
// stderr.
#pragma once

#include <spdlog/common.h>

#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace devmgr::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitNo = 1,
  kExitUsage = 2,
};

enum class OutputFormat { kTable, kJson, kYaml };

// AddOutputFlag adds `-o, --output table|json` (and yaml, for commands that print Kubernetes
// objects with `yaml`) to `command`, writing into `format`.
void AddOutputFlag(CLI::App& command, OutputFormat& format, bool yaml = false);

// ToYaml writes a JSON value as YAML, as kubectl -o yaml does: keys in their order, strings
// quoted where they would otherwise read back as another type.
std::string ToYaml(const nlohmann::json& value);

// Fail prints "devmgr: <reason>" on stderr and returns `code`.
int Fail(ExitCode code, absl::string_view reason);

// ParseFlagDuration reads a duration flag ("300ms", "30s", "5m"); InvalidArgument naming
// `flag` for anything else or a negative duration.
absl::StatusOr<absl::Duration> ParseFlagDuration(absl::string_view flag, const std::string& text);

// ParseNodeLabels reads --node-label KEY=VALUE flags (given once per label) into a map;
// InvalidArgument naming the one that is not KEY=VALUE.
absl::StatusOr<std::map<std::string, std::string>> ParseNodeLabels(
    const std::vector<std::string>& labels);

// ParseLogLevel reads --log-level: trace, debug, info, warn, error or off.
absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(const std::string& text);

// A subcommand sets its result here; main returns it.
struct CommandResult {
  int exit_code = kExitOk;
};

}  // namespace devmgr::cli
