#include "cmd/devmgr/command.h"

#include <iostream>
#include <map>

#include "absl/strings/str_cat.h"

namespace devmgr::cli {

void AddOutputFlag(CLI::App& command, OutputFormat& format) {
  const std::map<std::string, OutputFormat> formats{{"table", OutputFormat::kTable},
                                                    {"json", OutputFormat::kJson}};
  command.add_option("-o,--output", format, "Output format: table (default) or json")
      ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case));
}

int Fail(ExitCode code, absl::string_view reason) {
  std::cerr << "devmgr: " << reason << '\n';
  return code;
}

absl::StatusOr<absl::Duration> ParseFlagDuration(absl::string_view flag, const std::string& text) {
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": \"", text, "\" is not a duration like 300ms, 30s or 5m"));
  }
  return d;
}

absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(const std::string& text) {
  const spdlog::level::level_enum level = spdlog::level::from_str(text);
  if (level == spdlog::level::off && text != "off") {
    return absl::InvalidArgumentError(absl::StrCat("--log-level: unknown level \"", text,
                                                   "\"; want trace, debug, info, warn or error"));
  }
  return level;
}

}  // namespace devmgr::cli
