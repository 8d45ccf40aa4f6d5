#include "cmd/devmgr/log_flags.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "cmd/devmgr/command_tree.h"

namespace devmgr::cli {

void AddLogFlags(CLI::App& command, LogFlags& flags) {
  // Functions rather than plain options, so that a flag given with its default value counts as
  // given: the two are exclusive whatever their values.
  command
      .add_option_function<std::string>(
          "--log-level",
          [&flags](const std::string& level) {
            flags.level = level;
            flags.level_given = true;
          },
          "Log level: trace, debug, info, warn, error or off")
      ->type_name("LEVEL")
      ->default_str(flags.level);
  command
      .add_option_function<int>(
          "-v,--v",
          [&flags](const int& verbosity) {
            flags.verbosity = verbosity;
            flags.verbosity_given = true;
          },
          "Log verbosity, as the kubelet's -v: 0-2 info, 3-4 debug, 5 trace (instead "
          "of --log-level)")
      ->type_name("N")
      ->transform(DecimalInteger<int>())
      // The kubelet's flags (Go's pflag) take -v=3 too, which CLI11 hands on as "=3". Added
      // last, run first: CLI11 puts each transform before those it has.
      ->transform(CLI::Validator(
          [](std::string& text) {
            if (!text.empty() && text.front() == '=') text.erase(0, 1);
            return std::string();
          },
          ""));
}

absl::StatusOr<LoggerPtr> NewLogger(const LogFlags& flags, std::string name,
                                    spdlog::sink_ptr sink) {
  spdlog::level::level_enum level = spdlog::level::from_str(flags.level);
  if (level == spdlog::level::off && flags.level != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-level: unknown level \"", flags.level,
                     "\"; want trace, debug, info, warn, error or off"));
  }
  if (flags.verbosity_given) {
    if (flags.verbosity < 0) return absl::InvalidArgumentError("-v: must be 0 or more");
    if (flags.level_given) {
      return absl::InvalidArgumentError("--log-level and -v: give one of them");
    }
    level = VerbosityLevel(flags.verbosity);
  }
  auto logger = std::make_shared<spdlog::logger>(std::move(name), std::move(sink));
  logger->set_formatter(NewKlogFormatter());
  logger->set_level(level);
  return logger;
}

}  // namespace devmgr::cli
