// The devmgr command tree as data, and the help that is made from it: `devmgr help`, the examples
// at the end of each command's --help, the one-line answer to a mistyped or missing command (with
// the nearest commands suggested), and the model that `devmgr completion` (completion_cmd.h) and
// `devmgr man` (man_cmd.h) print. Everything here reads the CLI11 App tree that main.cc builds,
// so that none of it can drift from the commands themselves.
#pragma once

#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cmd/devmgr/command.h"

namespace devmgr::cli {

// ValueKind: what an option's value or a positional argument is, for shell completion. From the
// option's type name (FILE, DIR, PATH, COMMAND) or, for kChoice, its CLI11 validators' sets.
enum class ValueKind { kAny, kFile, kDir, kChoice, kCommand };

// OptionInfo: one flag, option or positional argument of a command.
struct OptionInfo {
  std::vector<std::string> names;  // "-o", "--output"; a positional: its name ("FILE")
  bool positional = false;
  bool takes_value = false;  // false for a flag (--quick)
  bool required = false;
  bool repeatable = false;  // given more than once, or takes several values
  std::string label;        // what the value is, as --help shows it: FORMAT, DURATION, INT, ...
  std::string description;
  std::string default_value;         // "" when --help shows none
  std::vector<std::string> choices;  // the values allowed, when CLI11 checks a set
  ValueKind kind = ValueKind::kAny;
};

// CommandInfo: one command and, recursively, the commands under it. Hidden commands (CLI11 group
// "") are left out.
struct CommandInfo {
  std::vector<std::string> path;  // {"pods", "list"}; empty for the program itself
  std::string description;
  std::string footer;                 // "Examples:\n  # ...\n  devmgr ..." (SetExamples), or ""
  std::vector<OptionInfo> options;    // flags and options, then positionals, in --help's order
  std::vector<CommandInfo> commands;  // in the order they were added
};

// DescribeCommand reads `command` and everything under it; `path` is where `command` is.
CommandInfo DescribeCommand(const CLI::App& command, std::vector<std::string> path = {});

// CommandLine: "devmgr pods list" for {"pods", "list"}.
std::string CommandLine(const std::vector<std::string>& path);

// Example: one use of a command, as kubectl prints them at the end of --help.
struct Example {
  const char* what;     // "List the pods of a daemon under /tmp/node"
  const char* command;  // "devmgr pods list --root-dir /tmp/node"
};

// SetExamples makes `examples` the footer of `command`'s --help ("Examples:" and, for each, the
// comment line and the command), which `devmgr man` prints too.
void SetExamples(CLI::App& command, std::initializer_list<Example> examples);

// SuggestCommands: the commands under `parent` whose names are within two edits (a swap of two
// letters is one) of `word` or start with it, nearest first; when none is, the commands further
// down under `parent` within two edits, as paths without "devmgr" ("pods list"). At most four.
std::vector<std::string> SuggestCommands(const CLI::App& parent, const std::string& word);

// UsageError: the one line that says what is wrong with a command line that CLI11 refused with
// `error` (after root.parse threw it), naming the command where it went wrong and its --help:
//   unknown command "lsit" for "devmgr pods"; did you mean "list"? (see devmgr pods --help)
//   "devmgr pods" needs a command: admit, remove, list or options (see devmgr pods --help)
//   --output: "xml" is not one of json, table, wide or yaml (see devmgr pods list --help)
//   --output needs a value: json, table, wide or yaml (see devmgr pods list --help)
//   --max-message-bytes: "99999999999" is not a number it takes (see ...)
// otherwise CLI11's own message, pointed at the --help of the command it was parsing.
std::string UsageError(const CLI::App& root, const CLI::ParseError& error);

// Positive and NonNegative check a number flag's value before CLI11 converts it, in words
// (CLI11's own PositiveNumber says "Value 0 not in range 0.000000 to 1797...", a 300-digit
// number): "--max-message-bytes: must be above 0, not 0".
CLI::Validator Positive();
CLI::Validator NonNegative();

// DecimalInteger<T> reads a whole-number flag's value as decimal, before CLI11 converts it:
// Debian's CLI11 (2.1) reads "010" as octal and "0x40" as hexadecimal, wraps a sign on an
// unsigned flag around and takes a number past 64 bits as the largest. It takes digits only,
// with a minus sign where T has one, in T's range, and hands CLI11 the number's plain text;
// anything else is "--count: \"0x40\" is not a number it takes (a whole number in decimal, from
// -9223372036854775808 to 9223372036854775807)".
template <typename T>
CLI::Validator DecimalInteger() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const size_t digits_from = std::is_signed_v<T> && !text.empty() && text[0] == '-' ? 1 : 0;
        T value{};
        if (text.size() == digits_from ||
            text.find_first_not_of("0123456789", digits_from) != std::string::npos ||
            !absl::SimpleAtoi(text, &value)) {
          return absl::StrCat(
              "\"", text, "\" is not a number it takes (a whole number in decimal, from ",
              std::numeric_limits<T>::min(), " to ", std::numeric_limits<T>::max(), ")");
        }
        text = absl::StrCat(value);
        return "";
      },
      "");
}

// AddHelpCommand adds `devmgr help [COMMAND...]` under `app` (the program): the --help of that
// command on stdout, or of the program; an unknown command is a usage error with suggestions.
void AddHelpCommand(CLI::App& app, CommandResult& result);

}  // namespace devmgr::cli
