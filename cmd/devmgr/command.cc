#include "cmd/devmgr/command.h"

#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/k8s_names.h"
#include "common/table.h"

namespace devmgr::cli {

void AddOutputFlag(CLI::App& command, OutputFormat& format, OutputFormats offered) {
  const bool all = offered == OutputFormats::kAll;
  std::map<std::string, OutputFormat> formats{{"table", OutputFormat::kTable},
                                              {"json", OutputFormat::kJson}};
  if (all) {
    formats.emplace("wide", OutputFormat::kWide);
    formats.emplace("yaml", OutputFormat::kYaml);
  }
  TakeFormatNames(command.add_option("-o,--output", format,
                                     all ? "Output format: table (default), wide, json or yaml"
                                         : "Output format: table (default) or json"),
                  formats)
      // --help names the value; the choices are in the description (and in the completions).
      ->option_text("FORMAT");
}

CLI::Option* TakeFormatNames(CLI::Option* option,
                             const std::map<std::string, OutputFormat>& formats) {
  // A transform runs before those added earlier: the name is checked, then mapped.
  return option->transform(CLI::CheckedTransformer(formats))
      ->transform(CLI::Validator(
          [formats](const std::string& value) {
            return formats.contains(value) ? std::string() : "not a format";
          },
          ""));
}

int Fail(ExitCode code, absl::string_view reason) {
  // A reason may carry a daemon's, a plugin's or a file's text: each of its lines is shown as
  // TerminalText, so that no escape sequence in it reaches the terminal (a CEL error keeps the
  // lines of its caret).
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(reason, '\n')) lines.push_back(TerminalText(line));
  std::cerr << "devmgr: " << absl::StrJoin(lines, "\n") << '\n';
  return code;
}

int OutputWritten(int code) {
  std::cout.flush();
  if (std::cout.good() || code != kExitOk) return code;
  return Fail(kExitUsage, "cannot write the output (a full disk, or a reader that went away)");
}

absl::StatusOr<absl::Duration> ParseFlagDuration(absl::string_view flag, const std::string& text) {
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": \"", text, "\" is not a duration like 300ms, 30s or 5m"));
  }
  return d;
}

absl::StatusOr<std::map<std::string, std::string>> ParseNodeLabels(
    const std::vector<std::string>& labels) {
  std::map<std::string, std::string> out;
  for (const std::string& label : labels) {
    const size_t equals = label.find('=');
    if (equals == std::string::npos || equals == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--node-label: \"", label, "\" is not KEY=VALUE"));
    }
    // As the kubelet reads its --node-labels: each side trimmed, the key a qualified name and
    // the value a label's, every bad part named.
    const std::string key(absl::StripAsciiWhitespace(absl::string_view(label).substr(0, equals)));
    const std::string value(
        absl::StripAsciiWhitespace(absl::string_view(label).substr(equals + 1)));
    std::vector<std::string> invalid;
    for (const auto& [part, errors] :
         {std::pair{&key, QualifiedNameErrors(key)}, std::pair{&value, LabelValueErrors(value)}}) {
      if (!errors.empty()) {
        invalid.push_back(absl::StrCat("'", *part, "' - ", absl::StrJoin(errors, ", ")));
      }
    }
    if (!invalid.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--node-label: invalid node labels: ", absl::StrJoin(invalid, "; ")));
    }
    out[key] = value;
  }
  return out;
}

}  // namespace devmgr::cli
