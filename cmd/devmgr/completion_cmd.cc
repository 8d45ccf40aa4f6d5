#include "cmd/devmgr/completion_cmd.h"

#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace devmgr::cli {
namespace {

// Spec: how the scripts complete a value: "@file", "@dir", "@command" (a devmgr command, for
// `devmgr help`), "@any" (nothing to offer), or the choices separated by "|". A positional that
// takes any number of words has "+" after its spec.
std::string Spec(const OptionInfo& option) {
  switch (option.kind) {
    case ValueKind::kFile:
      return "@file";
    case ValueKind::kDir:
      return "@dir";
    case ValueKind::kCommand:
      return "@command";
    case ValueKind::kChoice:
      return absl::StrJoin(option.choices, "|");
    case ValueKind::kAny:
      break;
  }
  return "@any";
}

// Table: what the scripts know of one command, under its key, the command line ("devmgr pods
// list": the program's own key is "devmgr", as bash has no empty keys).
struct Table {
  std::string key;
  std::vector<std::pair<std::string, std::string>> commands;  // name, description
  std::vector<std::pair<std::string, std::string>> flags;     // each name, description
  std::vector<std::pair<std::string, std::string>> values;    // flag name, Spec
  std::vector<std::string> args;                              // Spec of each positional
};

void Collect(const CommandInfo& command, std::vector<Table>& out) {
  Table table;
  table.key = CommandLine(command.path);
  for (const CommandInfo& sub : command.commands) {
    table.commands.emplace_back(sub.path.back(), sub.description);
  }
  for (const OptionInfo& option : command.options) {
    if (option.positional) {
      table.args.push_back(Spec(option) + (option.repeatable ? "+" : ""));
      continue;
    }
    for (const std::string& name : option.names) {
      table.flags.emplace_back(name, option.description);
      if (option.takes_value) table.values.emplace_back(name, Spec(option));
    }
  }
  out.push_back(std::move(table));
  for (const CommandInfo& sub : command.commands) Collect(sub, out);
}

std::vector<Table> Tables(const CommandInfo& root) {
  std::vector<Table> tables;
  Collect(root, tables);
  return tables;
}

// Quoted: `text` in single quotes, for bash and zsh.
std::string Quoted(absl::string_view text) {
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"'", "'\\''"}}), "'");
}

// FishQuoted: `text` in fish's single quotes, inside which \ and ' are escaped.
std::string FishQuoted(absl::string_view text) {
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"\\", "\\\\"}, {"'", "\\'"}}), "'");
}

std::string Names(const std::vector<std::pair<std::string, std::string>>& items) {
  return absl::StrJoin(
      items, " ", [](std::string* out, const auto& item) { absl::StrAppend(out, item.first); });
}

// Described: "name:description" lines, as zsh's _describe takes them.
std::string Described(const std::vector<std::pair<std::string, std::string>>& items) {
  return absl::StrJoin(items, "\n", [](std::string* out, const auto& item) {
    absl::StrAppend(out, item.first, ":", absl::StrReplaceAll(item.second, {{"\n", " "}}));
  });
}

// AssociativeArray: the body of a bash or zsh associative array, one `key value` per line, in
// bash's [key]=value form or zsh's key value form.
template <typename Value>
std::string AssociativeArray(const std::vector<Table>& tables, bool bash, Value value) {
  std::string out;
  for (const Table& table : tables) {
    for (const auto& [key, text] : value(table)) {
      absl::StrAppend(&out,
                      bash ? absl::StrCat("    [", Quoted(key), "]=", Quoted(text))
                           : absl::StrCat("    ", Quoted(key), " ", Quoted(text)),
                      "\n");
    }
  }
  return out;
}

using KeyValues = std::vector<std::pair<std::string, std::string>>;

KeyValues CommandNames(const Table& table) {
  if (table.commands.empty()) return {};
  return {{table.key, Names(table.commands)}};
}
KeyValues FlagNames(const Table& table) { return {{table.key, Names(table.flags)}}; }
KeyValues CommandHelp(const Table& table) {
  if (table.commands.empty()) return {};
  return {{table.key, Described(table.commands)}};
}
KeyValues FlagHelp(const Table& table) { return {{table.key, Described(table.flags)}}; }
KeyValues Values(const Table& table) {
  KeyValues out;
  for (const auto& [flag, spec] : table.values) out.emplace_back(table.key + " " + flag, spec);
  return out;
}
KeyValues Args(const Table& table) {
  if (table.args.empty()) return {};
  return {{table.key, absl::StrJoin(table.args, " ")}};
}

constexpr char kBashFunctions[] = R"(
# _devmgr_value SPEC WORD: the completions of a value of SPEC that start with WORD.
_devmgr_value() {
    local spec=$1 cur=$2
    case $spec in
        @file) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
        @dir) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
        @* | '') COMPREPLY=() ;;
        *) mapfile -t COMPREPLY < <(compgen -W "${spec//|/ }" -- "$cur") ;;
    esac
}

_devmgr() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local cmd=devmgr word option spec i expect=0 helping=0 positional=0
    local -a specs
    COMPREPLY=()
    # The command the words before the cursor select; flags' values are skipped. After
    # `devmgr help` the words name a command again.
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if [[ $word == "=" ]]; then expect=1; continue; fi
        if ((expect)); then expect=0; continue; fi
        case $word in
            --*=*) ;;
            -*) if [[ -n ${_devmgr_values["$cmd $word"]+set} ]]; then expect=1; fi ;;
            *)
                if [[ " ${_devmgr_commands[$cmd]-} " == *" $word "* ]]; then
                    cmd+=" $word"
                    positional=0
                    if [[ ${_devmgr_args[$cmd]-} == @command* ]]; then helping=1; cmd=devmgr; fi
                else
                    positional=$((positional + 1))
                fi ;;
        esac
    done
    # A flag's value: `-o json`, `--output json`, `--output=json` (bash splits at "=").
    option=$prev
    if [[ $cur == "=" ]]; then
        cur=
    elif [[ $prev == "=" ]]; then
        option=${COMP_WORDS[COMP_CWORD-2]}
    fi
    if ((expect)); then
        _devmgr_value "${_devmgr_values["$cmd $option"]-}" "$cur"
        return
    fi
    if [[ $cur == --*=* ]]; then
        option=${cur%%=*}
        _devmgr_value "${_devmgr_values["$cmd $option"]-}" "${cur#*=}"
        COMPREPLY=("${COMPREPLY[@]/#/$option=}")
        return
    fi
    if [[ $cur == -* ]]; then
        if ((!helping)); then
            mapfile -t COMPREPLY < <(compgen -W "${_devmgr_flags[$cmd]-}" -- "$cur")
        fi
        return
    fi
    if [[ -n ${_devmgr_commands[$cmd]-} ]]; then
        mapfile -t COMPREPLY < <(compgen -W "${_devmgr_commands[$cmd]}" -- "$cur")
        return
    fi
    if ((helping)); then return; fi
    read -ra specs <<<"${_devmgr_args[$cmd]-}"
    spec=${specs[positional]-}
    if [[ -z $spec && ${#specs[@]} -gt 0 && ${specs[-1]} == *+ ]]; then spec=${specs[-1]}; fi
    _devmgr_value "${spec%+}" "$cur"
}

complete -F _devmgr devmgr
)";

constexpr char kZshFunctions[] = R"(
# _devmgr_value SPEC: offers the values of SPEC.
_devmgr_value() {
    case $1 in
        @file) _files ;;
        @dir) _files -/ ;;
        @* | '') _message -e values value ;;
        *) local -a choices; choices=(${(s:|:)1}); compadd -a choices ;;
    esac
}

_devmgr() {
    local cmd=devmgr word key spec cur=${words[CURRENT]}
    local -i i expect=0 helping=0 positional=0
    local -a specs flags commands
    # The command the words before the cursor select; flags' values are skipped. After
    # `devmgr help` the words name a command again.
    for (( i = 2; i < CURRENT; i++ )); do
        word=${words[i]}
        if (( expect )); then expect=0; continue; fi
        case $word in
            --*=*) ;;
            -*) key="$cmd $word"; if (( ${+_devmgr_values[$key]} )); then expect=1; fi ;;
            *)
                if (( ${${(s: :)_devmgr_commands[$cmd]}[(Ie)$word]} )); then
                    cmd+=" $word"
                    positional=0
                    if [[ ${_devmgr_args[$cmd]} == @command* ]]; then helping=1; cmd=devmgr; fi
                else
                    positional=$(( positional + 1 ))
                fi ;;
        esac
    done
    if (( expect )); then
        key="$cmd ${words[CURRENT-1]}"
        _devmgr_value "${_devmgr_values[$key]}"
        return
    fi
    if [[ $cur == --*=* ]]; then
        key="$cmd ${cur%%=*}"
        compset -P '*='
        _devmgr_value "${_devmgr_values[$key]}"
        return
    fi
    if [[ $cur == -* ]]; then
        (( helping )) && return 1
        flags=("${(@f)_devmgr_flag_help[$cmd]}")
        _describe -t flags flag flags
        return
    fi
    if [[ -n ${_devmgr_commands[$cmd]} ]]; then
        commands=("${(@f)_devmgr_command_help[$cmd]}")
        _describe -t commands command commands
        return
    fi
    (( helping )) && return 1
    specs=(${(s: :)_devmgr_args[$cmd]})
    spec=${specs[positional + 1]}
    if [[ -z $spec && ${#specs} -gt 0 && ${specs[-1]} == *+ ]]; then spec=${specs[-1]}; fi
    _devmgr_value "${spec%+}"
}

# Loaded from $fpath, the file is _devmgr's first body: it runs the completion it just defined.
if [[ ${funcstack[1]} == _devmgr ]]; then
    _devmgr "$@"
elif (( ${+functions[compdef]} )); then
    compdef _devmgr devmgr
fi
)";

constexpr char kFishFunctions[] = R"(
# __devmgr_state: "H:COMMAND", the command the words before the cursor select (flags' values
# skipped), H 1 after `devmgr help`, whose words name a command again.
function __devmgr_state
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l cmd devmgr
    set -l expect 0
    set -l helping 0
    for word in $tokens
        if test $expect = 1
            set expect 0
            continue
        end
        switch $word
            case '--*=*'
            case '-*'
                if __devmgr_takes_value "$cmd $word"
                    set expect 1
                end
            case '*'
                if contains -- $word (__devmgr_commands $cmd)
                    set cmd "$cmd $word"
                    if __devmgr_names_command $cmd
                        set helping 1
                        set cmd devmgr
                    end
                end
        end
    end
    echo "$helping:$cmd"
end

function __devmgr_at --argument-names cmd
    test (__devmgr_state) = "0:$cmd"
end

function __devmgr_help_at --argument-names cmd
    test (__devmgr_state) = "1:$cmd"
end
)";

// FishSwitch: a fish function that answers `case` lines for its one argument.
std::string FishSwitch(absl::string_view name, absl::string_view what,
                       const std::vector<std::pair<std::string, std::string>>& cases,
                       absl::string_view fallback) {
  std::string out = absl::StrCat("\n# ", what, "\nfunction ", name, "\n    switch $argv[1]\n");
  for (const auto& [key, body] : cases) {
    absl::StrAppend(&out, "        case ", FishQuoted(key), "\n            ", body, "\n");
  }
  absl::StrAppend(&out, "    end\n", fallback.empty() ? "" : absl::StrCat("    ", fallback, "\n"),
                  "end\n");
  return out;
}

// FishValue: the options of `complete` that complete a value of `spec`.
std::string FishValue(absl::string_view spec) {
  if (spec == "@file") return "-F";
  if (spec == "@dir") return "-a '(__fish_complete_directories (commandline -ct))'";
  if (spec.empty() || spec[0] == '@') return "";
  return absl::StrCat("-a ", FishQuoted(absl::StrReplaceAll(spec, {{"|", " "}})));
}

constexpr char kGenerated[] =
    " completion for devmgr, generated by `devmgr completion` from devmgr's command tree\n";

}  // namespace

std::string BashCompletion(const CommandInfo& root) {
  const std::vector<Table> tables = Tables(root);
  return absl::StrCat(
      "# bash", kGenerated,
      "# Load it in this shell: source <(devmgr completion bash)\n"
      "# or save it as ~/.local/share/bash-completion/completions/devmgr\n\n",
      "declare -gA _devmgr_commands=(\n", AssociativeArray(tables, true, CommandNames), ")\n",
      "declare -gA _devmgr_flags=(\n", AssociativeArray(tables, true, FlagNames), ")\n",
      "declare -gA _devmgr_values=(\n", AssociativeArray(tables, true, Values), ")\n",
      "declare -gA _devmgr_args=(\n", AssociativeArray(tables, true, Args), ")\n", kBashFunctions);
}

std::string ZshCompletion(const CommandInfo& root) {
  const std::vector<Table> tables = Tables(root);
  return absl::StrCat(
      "#compdef devmgr\n# zsh", kGenerated,
      "# Load it in this shell, after compinit: source <(devmgr completion zsh)\n"
      "# or save it as _devmgr in a folder of $fpath\n\n",
      "typeset -gA _devmgr_commands _devmgr_command_help _devmgr_flag_help _devmgr_values "
      "_devmgr_args\n",
      "_devmgr_commands=(\n", AssociativeArray(tables, false, CommandNames), ")\n",
      "_devmgr_command_help=(\n", AssociativeArray(tables, false, CommandHelp), ")\n",
      "_devmgr_flag_help=(\n", AssociativeArray(tables, false, FlagHelp), ")\n",
      "_devmgr_values=(\n", AssociativeArray(tables, false, Values), ")\n", "_devmgr_args=(\n",
      AssociativeArray(tables, false, Args), ")\n", kZshFunctions);
}

std::string FishCompletion(const CommandInfo& root) {
  const std::vector<Table> tables = Tables(root);
  std::vector<std::pair<std::string, std::string>> commands;
  std::vector<std::pair<std::string, std::string>> valued;
  std::vector<std::pair<std::string, std::string>> naming;
  for (const Table& table : tables) {
    if (!table.commands.empty()) {
      commands.emplace_back(table.key, absl::StrCat("printf '%s\\n' ", Names(table.commands)));
    }
    for (const auto& [flag, spec] : table.values) {
      valued.emplace_back(absl::StrCat(table.key, " ", flag), "return 0");
    }
    if (!table.args.empty() && table.args.front().starts_with("@command")) {
      naming.emplace_back(table.key, "return 0");
    }
  }
  std::string out =
      absl::StrCat("# fish", kGenerated,
                   "# Load it in this shell: devmgr completion fish | source\n"
                   "# or save it as ~/.config/fish/completions/devmgr.fish\n",
                   FishSwitch("__devmgr_commands", "The commands under a command", commands, ""),
                   FishSwitch("__devmgr_takes_value", "Whether a command's flag takes a value",
                              valued, "return 1"),
                   FishSwitch("__devmgr_names_command",
                              "Whether a command's arguments name a command", naming, "return 1"),
                   kFishFunctions, "\ncomplete -c devmgr -f\n");
  for (const Table& table : tables) {
    const std::string at = FishQuoted(absl::StrCat("__devmgr_at ", FishQuoted(table.key)));
    const std::string help_at =
        FishQuoted(absl::StrCat("__devmgr_help_at ", FishQuoted(table.key)));
    for (const auto& [name, description] : table.commands) {
      for (const std::string& condition : {at, help_at}) {
        absl::StrAppend(&out, "complete -c devmgr -n ", condition, " -a ", FishQuoted(name), " -d ",
                        FishQuoted(description), "\n");
      }
    }
    for (const auto& [name, description] : table.flags) {
      std::string line =
          absl::StrCat("complete -c devmgr -n ", at, name.starts_with("--") ? " -l " : " -s ",
                       FishQuoted(name.substr(name.starts_with("--") ? 2 : 1)));
      for (const auto& [flag, spec] : table.values) {
        if (flag != name) continue;
        const std::string value = FishValue(spec);
        absl::StrAppend(&line, value == "-F" ? " -r -F" : " -x",
                        value.empty() || value == "-F" ? "" : absl::StrCat(" ", value));
      }
      absl::StrAppend(&out, line, " -d ", FishQuoted(description), "\n");
    }
    for (const std::string& arg : table.args) {
      const std::string value = FishValue(arg.substr(0, arg.find('+')));
      if (!value.empty()) absl::StrAppend(&out, "complete -c devmgr -n ", at, " ", value, "\n");
    }
  }
  return out;
}

void AddCompletionCommand(CLI::App& app, CommandResult& result) {
  auto shell = std::make_shared<std::string>();
  CLI::App* completion =
      app.add_subcommand("completion", "Print a shell completion script: bash, zsh or fish");
  completion->add_option("shell", *shell, "The shell the script is for")
      ->required()
      ->type_name("SHELL")
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  SetExamples(*completion, {{"Complete devmgr's commands and flags in this bash",
                             "source <(devmgr completion bash)"},
                            {"In zsh, after compinit", "source <(devmgr completion zsh)"},
                            {"In fish", "devmgr completion fish | source"}});
  completion->callback([&app, &result, shell] {
    const CommandInfo root = DescribeCommand(app);
    if (*shell == "bash") {
      std::cout << BashCompletion(root);
    } else if (*shell == "zsh") {
      std::cout << ZshCompletion(root);
    } else {
      std::cout << FishCompletion(root);
    }
    result.exit_code = kExitOk;
  });
}

}  // namespace devmgr::cli
