#include "cmd/devmgr/command.h"

#include <yaml-cpp/yaml.h>

#include <iostream>
#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace devmgr::cli {

void AddOutputFlag(CLI::App& command, OutputFormat& format, bool yaml) {
  std::map<std::string, OutputFormat> formats{{"table", OutputFormat::kTable},
                                              {"json", OutputFormat::kJson}};
  if (yaml) formats.emplace("yaml", OutputFormat::kYaml);
  command
      .add_option("-o,--output", format,
                  yaml ? "Output format: table (default), json or yaml"
                       : "Output format: table (default) or json")
      ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case));
}

namespace {

// NeedsQuotes: a plain scalar with this text would read back as something other than a string.
bool NeedsQuotes(const std::string& text) {
  static const std::set<std::string> kWords = {
      "true", "false", "True", "False", "TRUE", "FALSE", "null", "Null", "NULL", "~",
      "yes",  "no",    "on",   "off",   "y",    "n",     "Yes",  "No",   "On",   "Off"};
  double number = 0;
  return text.empty() || kWords.contains(text) || absl::SimpleAtod(text, &number);
}

void Emit(YAML::Emitter& out, const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [key, item] : value.items()) {
        out << YAML::Key << key << YAML::Value;
        Emit(out, item);
      }
      out << YAML::EndMap;
      return;
    case nlohmann::json::value_t::array:
      out << YAML::BeginSeq;
      for (const nlohmann::json& item : value) Emit(out, item);
      out << YAML::EndSeq;
      return;
    case nlohmann::json::value_t::string: {
      const std::string& text = value.get_ref<const std::string&>();
      if (NeedsQuotes(text)) out << YAML::DoubleQuoted;
      out << text;
      return;
    }
    case nlohmann::json::value_t::null:
      out << YAML::Null;
      return;
    default:
      out << value.dump();  // numbers and booleans, as JSON writes them
      return;
  }
}

}  // namespace

std::string ToYaml(const nlohmann::json& value) {
  YAML::Emitter out;
  Emit(out, value);
  return std::string(out.c_str()) + "\n";
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

absl::StatusOr<std::map<std::string, std::string>> ParseNodeLabels(
    const std::vector<std::string>& labels) {
  std::map<std::string, std::string> out;
  for (const std::string& label : labels) {
    const size_t equals = label.find('=');
    if (equals == std::string::npos || equals == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--node-label: \"", label, "\" is not KEY=VALUE"));
    }
    out[label.substr(0, equals)] = label.substr(equals + 1);
  }
  return out;
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
