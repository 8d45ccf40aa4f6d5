// What every devmgr subcommand shares: its exit codes and output format flag.
//
// The command-line contract (DESIGN.md): exit 0 on success, 1 when the answer is "no" (refused,
// mismatch, not found), 2 for bad usage or unreadable input, always with a one-line reason on
// stderr.
#pragma once

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

// How a command prints its answer (cmd/devmgr/printer.h): a table; the table with the columns
// it leaves out (wide, as kubectl's); or the objects as JSON or YAML.
enum class OutputFormat { kTable, kJson, kYaml, kWide };

// Which formats a command's -o offers: every one for commands that print objects; table and
// JSON for reports (bench).
enum class OutputFormats { kAll, kTableAndJson };

// AddOutputFlag adds `-o, --output table|wide|json|yaml` (or `table|json`) to `command`,
// writing into `format`.
void AddOutputFlag(CLI::App& command, OutputFormat& format,
                   OutputFormats offered = OutputFormats::kAll);

// TakeFormatNames makes an -o `option` take exactly the names of `formats`, as kubectl's -o
// does: not "JSON", nor the numbers CLI11's mapping to the enum would take as well ("-o 1").
CLI::Option* TakeFormatNames(CLI::Option* option,
                             const std::map<std::string, OutputFormat>& formats);

// Fail prints "devmgr: <reason>" on stderr and returns `code`.
int Fail(ExitCode code, absl::string_view reason);

// OutputWritten: `code`, or, for a command that succeeded but whose output could not all be
// written to stdout (a full disk; a pipe whose reader went away, with SIGPIPE ignored), a
// failure with its reason: a script must not take a cut answer for a whole one.
int OutputWritten(int code);

// ParseFlagDuration reads a duration flag ("300ms", "30s", "5m"); InvalidArgument naming
// `flag` for anything else or a negative duration.
absl::StatusOr<absl::Duration> ParseFlagDuration(absl::string_view flag, const std::string& text);

// ParseNodeLabels reads --node-label KEY=VALUE flags (given once per label) into a map, each
// side trimmed; InvalidArgument naming the one that is not KEY=VALUE, and with the kubelet's
// texts keys in the kubernetes.io or k8s.io namespaces that a kubelet may not set ("unknown
// 'kubernetes.io' or 'k8s.io' labels ...") and keys that are not qualified names or values that
// are not label values ("invalid node labels: 'KEY' - ...").
absl::StatusOr<std::map<std::string, std::string>> ParseNodeLabels(
    const std::vector<std::string>& labels);

// A subcommand sets its result here; main returns it.
struct CommandResult {
  int exit_code = kExitOk;
};

}  // namespace devmgr::cli
