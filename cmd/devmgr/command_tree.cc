#include "cmd/devmgr/command_tree.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace devmgr::cli {
namespace {

// The commands --help lists under `command`: those in a group (CLI11's hidden ones have none).
std::vector<const CLI::App*> VisibleCommands(const CLI::App& command) {
  return command.get_subcommands([](const CLI::App* sub) { return !sub->get_group().empty(); });
}

// Choices: the values of the first set in a CLI11 type name. IsMember describes itself as
// "{a,b,c}", CheckedTransformer as "value in {a->1,b->2} OR {1,2}": the names are before "->".
std::vector<std::string> Choices(const std::string& type_name) {
  const size_t open = type_name.find('{');
  const size_t close = type_name.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return {};
  std::vector<std::string> out;
  for (absl::string_view item :
       absl::StrSplit(absl::string_view(type_name).substr(open + 1, close - open - 1), ',')) {
    item = absl::StripAsciiWhitespace(item.substr(0, item.find("->")));
    if (!item.empty()) out.emplace_back(item);
  }
  return out;
}

OptionInfo DescribeOption(const CLI::Option& option) {
  OptionInfo info;
  info.positional = !option.nonpositional();
  if (info.positional) {
    info.names.push_back(option.get_name());
  } else {
    for (const std::string& name : option.get_snames()) info.names.push_back("-" + name);
    for (const std::string& name : option.get_lnames()) info.names.push_back("--" + name);
  }
  info.takes_value = option.get_expected_max() > 0;  // CLI11's flags expect 0 values
  info.required = option.get_required();
  info.repeatable = option.get_items_expected_max() > 1;
  info.description = option.get_description();
  info.default_value = option.get_default_str();
  const std::string type_name = option.get_type_name();
  if (info.takes_value) {
    info.label = option.get_option_text().empty() ? type_name.substr(0, type_name.find(':'))
                                                  : option.get_option_text();
    info.choices = Choices(type_name);
  }
  if (info.label == "FILE" || info.label == "PATH") {
    info.kind = ValueKind::kFile;
  } else if (info.label == "DIR") {
    info.kind = ValueKind::kDir;
  } else if (info.label == "COMMAND") {
    info.kind = ValueKind::kCommand;
  } else if (!info.choices.empty()) {
    info.kind = ValueKind::kChoice;
  }
  return info;
}

// EditDistance: the optimal string alignment distance (Levenshtein's, plus a swap of two
// neighbouring letters as one edit), without regard to case.
int EditDistance(absl::string_view a, absl::string_view b) {
  const std::string x = absl::AsciiStrToLower(a);
  const std::string y = absl::AsciiStrToLower(b);
  std::vector<std::vector<int>> d(x.size() + 1, std::vector<int>(y.size() + 1));
  for (size_t i = 0; i <= x.size(); ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= y.size(); ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= x.size(); ++i) {
    for (size_t j = 1; j <= y.size(); ++j) {
      const int cost = x[i - 1] == y[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && x[i - 1] == y[j - 2] && x[i - 2] == y[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[x.size()][y.size()];
}

constexpr int kSuggestionDistance = 2;
constexpr size_t kMaxSuggestions = 4;

// Near: what is within kSuggestionDistance of `word`, with its distance.
struct Near {
  int distance;
  std::string name;
};

void FindDeep(const CLI::App& command, const std::string& prefix, const std::string& word,
              std::vector<Near>& out) {
  for (const CLI::App* sub : VisibleCommands(command)) {
    const std::string path = absl::StrCat(prefix, prefix.empty() ? "" : " ", sub->get_name());
    if (const int distance = EditDistance(word, sub->get_name()); distance <= kSuggestionDistance) {
      out.push_back({distance, path});
    }
    FindDeep(*sub, path, word, out);
  }
}

std::vector<std::string> Nearest(std::vector<Near> near) {
  std::stable_sort(near.begin(), near.end(),
                   [](const Near& a, const Near& b) { return a.distance < b.distance; });
  std::vector<std::string> out;
  for (Near& item : near) {
    if (out.size() == kMaxSuggestions) break;
    if (std::find(out.begin(), out.end(), item.name) == out.end()) {
      out.push_back(std::move(item.name));
    }
  }
  return out;
}

// OrList: a, "a or b", "a, b or c"; each item in double quotes when `quoted`.
std::string OrList(const std::vector<std::string>& items, bool quoted) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) absl::StrAppend(&out, i + 1 == items.size() ? " or " : ", ");
    absl::StrAppend(&out, quoted ? "\"" : "", items[i], quoted ? "\"" : "");
  }
  return out;
}

// Path: the names from the program (excluded) down to `command`.
std::vector<std::string> Path(const CLI::App& command) {
  std::vector<std::string> path;
  for (const CLI::App* at = &command; at->get_parent() != nullptr; at = at->get_parent()) {
    path.insert(path.begin(), at->get_name());
  }
  return path;
}

// UnknownCommand: the line for `word`, not a command under `parent`.
std::string UnknownCommand(const CLI::App& parent, const std::string& word) {
  const std::vector<std::string> path = Path(parent);
  std::string line = absl::StrCat("unknown command \"", word, "\" for \"", CommandLine(path), "\"");
  std::vector<std::string> suggestions = SuggestCommands(parent, word);
  // A command found deeper than `parent` is named with its whole command line.
  const bool deep = !suggestions.empty() && absl::StrContains(suggestions.front(), ' ');
  if (deep) {
    for (std::string& suggestion : suggestions) suggestion = absl::StrCat("devmgr ", suggestion);
  }
  if (!suggestions.empty()) {
    absl::StrAppend(&line, "; did you mean ", OrList(suggestions, true), "?");
  }
  absl::StrAppend(&line, " (see ", CommandLine(path), " --help)");
  return line;
}

// UnknownFlag: the line for `word`, an argument starting with "-" that `command` has no flag
// for; flags of `command` within two edits are suggested.
std::string UnknownFlag(const CLI::App& command, const std::string& word) {
  const std::vector<std::string> path = Path(command);
  const std::string name = word.substr(0, word.find('='));
  std::vector<Near> near;
  for (const CLI::Option* option : command.get_options()) {
    if (option->get_group().empty()) continue;
    for (const std::string& long_name : option->get_lnames()) {
      const std::string flag = "--" + long_name;
      if (const int distance = EditDistance(name, flag); distance <= kSuggestionDistance) {
        near.push_back({distance, flag});
      }
    }
  }
  std::string line = absl::StrCat("unknown flag \"", name, "\" for \"", CommandLine(path), "\"");
  if (std::vector<std::string> suggestions = Nearest(std::move(near)); !suggestions.empty()) {
    absl::StrAppend(&line, "; did you mean ", OrList(suggestions, true), "?");
  }
  absl::StrAppend(&line, " (see ", CommandLine(path), " --help)");
  return line;
}

int RunHelp(const CLI::App& root, const std::vector<std::string>& words) {
  const CLI::App* at = &root;
  for (const std::string& word : words) {
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : VisibleCommands(*at)) {
      if (sub->get_name() == word) next = sub;
    }
    if (next == nullptr) return Fail(kExitUsage, UnknownCommand(*at, word));
    at = next;
  }
  std::cout << at->get_formatter()->make_help(at, CommandLine(Path(*at)),
                                              CLI::AppFormatMode::Normal);
  return kExitOk;
}

// The option a CLI11 message is about: "NAME: ..." or "Could not convert: NAME = ...".
const CLI::Option* OptionNamedIn(const CLI::App& command, absl::string_view message) {
  absl::ConsumePrefix(&message, "Could not convert: ");
  for (const CLI::Option* option : command.get_options()) {
    const std::string& name = option->get_name();
    if (!name.empty() &&
        (absl::StartsWith(message, name + ":") || absl::StartsWith(message, name + " = "))) {
      return option;
    }
  }
  return nullptr;
}

// A number check for CLI11: "" when `text` is a number that `accept` takes, else what is wrong.
CLI::Validator NumberCheck(bool (*accept)(double), const char* want) {
  return CLI::Validator(
      [accept, want](std::string& text) -> std::string {
        double value = 0;
        if (!absl::SimpleAtod(text, &value)) return absl::StrCat("\"", text, "\" is not a number");
        if (!accept(value)) return absl::StrCat("must be ", want, ", not ", text);
        return "";
      },
      "");
}

}  // namespace

CommandInfo DescribeCommand(const CLI::App& command, std::vector<std::string> path) {
  CommandInfo info;
  info.description = command.get_description();
  info.footer = command.get_footer();
  for (const CLI::Option* option : command.get_options()) {
    if (option->get_group().empty()) continue;  // hidden
    info.options.push_back(DescribeOption(*option));
  }
  std::stable_partition(info.options.begin(), info.options.end(),
                        [](const OptionInfo& option) { return !option.positional; });
  for (const CLI::App* sub : VisibleCommands(command)) {
    std::vector<std::string> sub_path = path;
    sub_path.push_back(sub->get_name());
    info.commands.push_back(DescribeCommand(*sub, std::move(sub_path)));
  }
  info.path = std::move(path);
  return info;
}

std::string CommandLine(const std::vector<std::string>& path) {
  return path.empty() ? "devmgr" : absl::StrCat("devmgr ", absl::StrJoin(path, " "));
}

void SetExamples(CLI::App& command, std::initializer_list<Example> examples) {
  // kubectl's layout: a comment line, the command, a blank line between two examples.
  std::string footer = "Examples:";
  const char* separator = "";
  for (const Example& example : examples) {
    absl::StrAppend(&footer, separator, "\n  # ", example.what, "\n  ", example.command);
    separator = "\n";
  }
  command.footer(std::move(footer));
}

std::vector<std::string> SuggestCommands(const CLI::App& parent, const std::string& word) {
  std::vector<Near> near;
  for (const CLI::App* sub : VisibleCommands(parent)) {
    const std::string& name = sub->get_name();
    const int distance = EditDistance(word, name);
    if (distance <= kSuggestionDistance ||
        absl::StartsWith(absl::AsciiStrToLower(name), absl::AsciiStrToLower(word))) {
      near.push_back({distance, name});
    }
  }
  // Deeper: "lsit" at the top is "pods list" and others.
  if (near.empty()) FindDeep(parent, absl::StrJoin(Path(parent), " "), word, near);
  return Nearest(std::move(near));
}

std::string UsageError(const CLI::App& root, const CLI::ParseError& error) {
  // The command CLI11 was in when it gave up: the last one the command line selected.
  const CLI::App* at = &root;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
  const std::vector<std::string> remaining = at->remaining();
  if (!VisibleCommands(*at).empty()) {
    for (const std::string& word : remaining) {
      if (!absl::StartsWith(word, "-")) return UnknownCommand(*at, word);
    }
  }
  for (const std::string& word : remaining) {
    if (absl::StartsWith(word, "-") && word != "-" && word != "--") return UnknownFlag(*at, word);
  }
  const std::string see = absl::StrCat(" (see ", CommandLine(Path(*at)), " --help)");
  if (const std::vector<const CLI::App*> commands = VisibleCommands(*at);
      !commands.empty() && dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    std::vector<std::string> names;
    for (const CLI::App* command : commands) names.push_back(command->get_name());
    return absl::StrCat("\"", CommandLine(Path(*at)), "\" needs a command: ", OrList(names, false),
                        see);
  }
  // A value outside a flag's set: the set by its names, not CLI11's mapping to numbers.
  if (dynamic_cast<const CLI::ValidationError*>(&error) != nullptr) {
    for (const CLI::Option* option : at->get_options()) {
      const std::vector<std::string> choices = Choices(option->get_type_name());
      if (choices.empty() || option->results().empty() ||
          !absl::StartsWith(error.what(), option->get_name() + ":")) {
        continue;
      }
      return absl::StrCat(option->get_name(), ": \"", option->results().back(), "\" is not one of ",
                          OrList(choices, false), see);
    }
  }
  // A flag without its value, or a value its type cannot hold: CLI11 names its own internals
  // ("1 required ENUM:value in {json->1,...} missing", "Could not convert").
  if (const CLI::Option* option = OptionNamedIn(*at, error.what()); option != nullptr) {
    const std::vector<std::string> choices = Choices(option->get_type_name());
    // ArgumentMismatch also says a flag was given too often ("At Most 1 required but received
    // 2"); only its "missing" forms are a value left out.
    const absl::string_view what = error.what();
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr &&
        (absl::EndsWith(what, " missing") || absl::EndsWith(what, "received 0"))) {
      return absl::StrCat(option->get_name(), " needs a value",
                          choices.empty() ? "" : absl::StrCat(": ", OrList(choices, false)), see);
    }
    const std::string type = option->get_type_name();
    if (dynamic_cast<const CLI::ConversionError*>(&error) != nullptr &&
        !option->results().empty() &&
        (absl::StartsWith(type, "INT") || absl::StartsWith(type, "UINT") ||
         absl::StartsWith(type, "FLOAT") || absl::StartsWith(type, "BYTES"))) {
      return absl::StrCat(option->get_name(), ": \"", option->results().back(),
                          "\" is not a number it takes", see);
    }
  }
  return absl::StrCat(error.what(), see);
}

CLI::Validator Positive() {
  return NumberCheck(
      +[](double value) { return value > 0; }, "above 0");
}

CLI::Validator NonNegative() {
  return NumberCheck(
      +[](double value) { return value >= 0; }, "0 or more");
}

void AddHelpCommand(CLI::App& app, CommandResult& result) {
  auto words = std::make_shared<std::vector<std::string>>();
  CLI::App* help = app.add_subcommand("help", "Print the help of a command, or of devmgr");
  help->add_option("command", *words, "The command, one word after another: pods list")
      ->type_name("COMMAND");
  SetExamples(*help, {{"What devmgr's commands are", "devmgr help"},
                      {"The flags of pods list", "devmgr help pods list"}});
  help->callback([&app, &result, words] { result.exit_code = RunHelp(app, *words); });
}

}  // namespace devmgr::cli
