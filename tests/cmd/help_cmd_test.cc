// What devmgr says of itself: `devmgr help`, the answer to a mistyped or missing command, the
// labels and voice of --help, the examples at its end, the man page (`devmgr man`) and the shell
// completion scripts (`devmgr completion`), each sourced in its shell and asked to complete.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/testlib/subprocess.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::cli {
namespace {

using testing::ProcessResult;
using testing::RunDevmgr;
using testing::RunProcess;
using testing::TempDir;

// OneLine: a usage error is one line on stderr.
void ExpectOneLine(const ProcessResult& result) {
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
}

// Program: the path of `name` in /usr/bin or /bin, or "" when the machine has none.
std::string Program(const std::string& name) {
  for (const std::string dir : {"/usr/bin/", "/bin/"}) {
    if (::access((dir + name).c_str(), X_OK) == 0) return dir + name;
  }
  return "";
}

// ManPage: `devmgr man`'s output.
std::string ManPage() {
  const ProcessResult man = RunDevmgr({"man"});
  EXPECT_EQ(man.exit_code, 0) << man.err;
  return man.out;
}

// Unroff: a line of the man page as text: its escapes undone.
std::string Unroff(absl::string_view line) {
  return absl::StrReplaceAll(
      absl::StripPrefix(line, "\\&"),
      {{"\\-", "-"}, {"\\e", "\\"}, {"\\fB", ""}, {"\\fI", ""}, {"\\fR", ""}});
}

// Commands: every command the man page has a section for, as its words ({"pods", "list"}).
std::vector<std::vector<std::string>> Commands(const std::string& man) {
  std::vector<std::vector<std::string>> out;
  for (absl::string_view line : absl::StrSplit(man, '\n')) {
    if (!absl::ConsumePrefix(&line, ".SS \"devmgr ")) continue;
    out.push_back(absl::StrSplit(Unroff(absl::StripSuffix(line, "\"")), ' '));
  }
  return out;
}

TEST(HelpCommandTest, UnknownCommandNamesTheWordSuggestsTheNearestAndPointsAtHelp) {
  const ProcessResult result = RunDevmgr({"lsit"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err,
            "devmgr: unknown command \"lsit\" for \"devmgr\"; did you mean \"devmgr pods list\", "
            "\"devmgr slices list\" or \"devmgr podresources list\"? (see devmgr --help)\n");

  const ProcessResult verb = RunDevmgr({"pods", "lsit"});
  EXPECT_EQ(verb.exit_code, 2);
  EXPECT_EQ(verb.err,
            "devmgr: unknown command \"lsit\" for \"devmgr pods\"; did you mean \"list\"? (see "
            "devmgr pods --help)\n");

  const ProcessResult prefix = RunDevmgr({"pod", "list"});
  EXPECT_EQ(prefix.exit_code, 2);
  EXPECT_EQ(prefix.err,
            "devmgr: unknown command \"pod\" for \"devmgr\"; did you mean \"pods\" or "
            "\"podresources\"? (see devmgr --help)\n");

  // Deeper commands are looked for under the command where the word is, not elsewhere.
  const ProcessResult nested = RunDevmgr({"dra", "checkpoint", "lsit", "file"});
  EXPECT_EQ(nested.exit_code, 2);
  EXPECT_EQ(nested.err,
            "devmgr: unknown command \"lsit\" for \"devmgr dra checkpoint\" (see devmgr dra "
            "checkpoint --help)\n");

  const ProcessResult nothing_near = RunDevmgr({"checkpoint", "frobnicate", "file"});
  EXPECT_EQ(nothing_near.exit_code, 2);
  EXPECT_EQ(nothing_near.err,
            "devmgr: unknown command \"frobnicate\" for \"devmgr checkpoint\" (see devmgr "
            "checkpoint --help)\n");
}

TEST(HelpCommandTest, UnknownFlagSuggestsTheNearestFlagOfItsCommand) {
  const ProcessResult result = RunDevmgr({"pods", "list", "--rot-dir", "/tmp"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "devmgr: unknown flag \"--rot-dir\" for \"devmgr pods list\"; did you mean "
            "\"--root-dir\"? (see devmgr pods list --help)\n");
  const ProcessResult root = RunDevmgr({"--verison"});
  EXPECT_EQ(root.exit_code, 2);
  EXPECT_EQ(root.err,
            "devmgr: unknown flag \"--verison\" for \"devmgr\"; did you mean \"--version\"? (see "
            "devmgr --help)\n");
}

TEST(HelpCommandTest, ValueOutsideItsSetNamesTheSet) {
  const ProcessResult format = RunDevmgr({"pods", "list", "-o", "xml"});
  EXPECT_EQ(format.exit_code, 2);
  EXPECT_EQ(format.err,
            "devmgr: --output: \"xml\" is not one of json, table, wide or yaml (see devmgr pods "
            "list --help)\n");
  // Only the names, as kubectl's -o: not in capitals, nor the numbers CLI11's mapping to the
  // enum took as well (-o 1 printed JSON).
  for (const char* value : {"JSON", "1", "0"}) {
    const ProcessResult other = RunDevmgr({"pods", "list", "-o", value});
    EXPECT_EQ(other.exit_code, 2);
    EXPECT_EQ(other.err, absl::StrCat("devmgr: --output: \"", value,
                                      "\" is not one of json, table, wide or yaml (see devmgr "
                                      "pods list --help)\n"));
  }
  const ProcessResult shell = RunDevmgr({"completion", "tcsh"});
  EXPECT_EQ(shell.exit_code, 2);
  EXPECT_EQ(shell.err,
            "devmgr: shell: \"tcsh\" is not one of bash, zsh or fish (see devmgr completion "
            "--help)\n");
}

// A flag without its value, a number out of its range or too large for its type: one line in
// words, where CLI11 wrote its internals ("1 required ENUM:value in {json->1,...} missing",
// "Value 0 not in range 0.000000 to 1797...", "Could not convert").
TEST(HelpCommandTest, MissingOrUnfitValuesAreSaidInWords) {
  for (const auto& [args, text] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"pods", "list", "--output"},
            "--output needs a value: json, table, wide or yaml (see devmgr pods list --help)"},
           {{"podresources", "list", "--timeout"},
            "--timeout needs a value (see devmgr podresources list --help)"},
           {{"podresources", "list", "--max-message-bytes", "0"},
            "--max-message-bytes: must be above 0, not 0 (see devmgr podresources list --help)"},
           {{"podresources", "list", "--max-message-bytes", "99999999999"},
            "--max-message-bytes: \"99999999999\" is not a number it takes (a whole number in "
            "decimal, from -2147483648 to 2147483647) (see devmgr podresources list --help)"},
           // Debian's CLI11 read these as octal, hexadecimal, and a wrapped-around 2^64 - 5.
           {{"podresources", "list", "--max-message-bytes", "0x40"},
            "--max-message-bytes: \"0x40\" is not a number it takes (a whole number in decimal, "
            "from -2147483648 to 2147483647) (see devmgr podresources list --help)"},
           {{"podresources", "watch", "--resume-revision=-5"},
            "--resume-revision: \"-5\" is not a number it takes (a whole number in decimal, "
            "from 0 to 18446744073709551615) (see devmgr podresources watch --help)"},
           {{"podresources", "watch", "--count", "99999999999999999999"},
            "--count: \"99999999999999999999\" is not a number it takes (a whole number in "
            "decimal, from -9223372036854775808 to 9223372036854775807) (see devmgr podresources "
            "watch --help)"},
           {{"podresources", "watch", "--count=-1"},
            "--count: must be 0 or more, not -1 (see devmgr podresources watch --help)"},
           {{"bench", "--pods", "-1"}, "--pods: must be above 0, not -1 (see devmgr bench --help)"},
       }) {
    const ProcessResult result = RunDevmgr(args);
    EXPECT_EQ(result.exit_code, 2) << args.back();
    EXPECT_EQ(result.err, "devmgr: " + text + "\n");
  }
  // A flag given twice is no value left out.
  const ProcessResult twice = RunDevmgr({"pods", "list", "-o", "json", "-o", "yaml"});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_EQ(twice.err.find("needs a value"), std::string::npos) << twice.err;
}

TEST(HelpCommandTest, MissingCommandListsTheCommandsThere) {
  const ProcessResult pods = RunDevmgr({"pods"});
  EXPECT_EQ(pods.exit_code, 2);
  EXPECT_EQ(pods.err,
            "devmgr: \"devmgr pods\" needs a command: admit, remove, list or options (see devmgr "
            "pods --help)\n");

  const ProcessResult program = RunDevmgr({});
  EXPECT_EQ(program.exit_code, 2);
  ExpectOneLine(program);
  EXPECT_TRUE(absl::StartsWith(program.err, "devmgr: \"devmgr\" needs a command: serve, pods, "))
      << program.err;
  EXPECT_TRUE(absl::EndsWith(program.err, " or help (see devmgr --help)\n")) << program.err;

  const ProcessResult nested = RunDevmgr({"dra", "checkpoint"});
  EXPECT_EQ(nested.exit_code, 2);
  EXPECT_EQ(nested.err,
            "devmgr: \"devmgr dra checkpoint\" needs a command: verify or show (see devmgr dra "
            "checkpoint --help)\n");
}

TEST(HelpCommandTest, OtherUsageErrorsPointAtTheirCommandsHelp) {
  const ProcessResult extra = RunDevmgr({"pods", "list", "extra"});
  EXPECT_EQ(extra.exit_code, 2);
  ExpectOneLine(extra);
  EXPECT_TRUE(absl::StrContains(extra.err, "extra")) << extra.err;
  EXPECT_TRUE(absl::EndsWith(extra.err, " (see devmgr pods list --help)\n")) << extra.err;

  const ProcessResult missing = RunDevmgr({"pods", "admit"});
  EXPECT_EQ(missing.exit_code, 2);
  ExpectOneLine(missing);
  EXPECT_TRUE(absl::EndsWith(missing.err, " (see devmgr pods admit --help)\n")) << missing.err;
}

TEST(HelpCommandTest, HelpPrintsTheHelpOfTheCommandItNames) {
  const ProcessResult help = RunDevmgr({"help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_EQ(help.out, RunDevmgr({"--help"}).out);
  EXPECT_TRUE(absl::StrContains(help.out, "Usage: devmgr [OPTIONS] SUBCOMMAND")) << help.out;

  const ProcessResult pods = RunDevmgr({"help", "pods"});
  EXPECT_EQ(pods.exit_code, 0) << pods.err;
  EXPECT_EQ(pods.out, RunDevmgr({"pods", "--help"}).out);
  for (const char* verb : {"admit", "remove", "list", "options"}) {
    EXPECT_TRUE(absl::StrContains(pods.out, std::string("\n  ") + verb + " ")) << pods.out;
  }

  const ProcessResult list = RunDevmgr({"help", "pods", "list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(list.out, RunDevmgr({"pods", "list", "--help"}).out);
  EXPECT_TRUE(absl::StrContains(list.out, "Usage: devmgr pods list [OPTIONS]")) << list.out;

  const ProcessResult unknown = RunDevmgr({"help", "pods", "lsit"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.err,
            "devmgr: unknown command \"lsit\" for \"devmgr pods\"; did you mean \"list\"? (see "
            "devmgr pods --help)\n");
}

TEST(HelpCommandTest, FlagValuesHaveNamesNotCli11Types) {
  const ProcessResult list = RunDevmgr({"pods", "list", "--help"});
  EXPECT_TRUE(absl::StrContains(list.out, "-o,--output FORMAT ")) << list.out;
  EXPECT_TRUE(absl::StrContains(list.out, "--timeout DURATION=10s")) << list.out;
  EXPECT_TRUE(absl::StrContains(list.out, "--root-dir DIR=/var/lib/kubelet")) << list.out;

  // No command shows CLI11's enum mapping or its catch-all TEXT.
  for (const std::vector<std::string>& command : Commands(ManPage())) {
    std::vector<std::string> args = command;
    args.emplace_back("--help");
    const ProcessResult help = RunDevmgr(args);
    ASSERT_EQ(help.exit_code, 0) << absl::StrJoin(command, " ") << ": " << help.err;
    EXPECT_FALSE(absl::StrContains(help.out, "ENUM")) << help.out;
    for (absl::string_view line : absl::StrSplit(help.out, '\n')) {
      EXPECT_FALSE(absl::StrContains(line, " TEXT")) << help.out;
    }
  }
}

// Voice: a description starts with a capital letter (or a name, a number or a symbol) and has no
// final period, as kubectl's do.
void ExpectVoice(const std::string& where, const std::string& description) {
  ASSERT_FALSE(description.empty()) << where;
  EXPECT_FALSE(description.front() >= 'a' && description.front() <= 'z')
      << where << ": \"" << description << "\" starts with a lower-case letter";
  EXPECT_FALSE(absl::EndsWith(description, ".") && !absl::EndsWith(description, "..."))
      << where << ": \"" << description << "\" ends with a period";
}

TEST(HelpCommandTest, EveryDescriptionSpeaksWithOneVoiceAndEveryCommandHasExamples) {
  const std::string man = ManPage();
  const std::vector<std::string> lines = absl::StrSplit(man, '\n');
  std::string command;
  std::set<std::string> with_examples;
  int commands = 0;
  int options = 0;
  for (size_t i = 0; i + 2 < lines.size(); ++i) {
    absl::string_view line = lines[i];
    if (line == ".SH \"EXIT STATUS\"") break;  // the page's own text follows
    if (absl::ConsumePrefix(&line, ".SS \"")) {
      command = Unroff(absl::StripSuffix(line, "\""));
      ExpectVoice(command, Unroff(lines[i + 1]));
      ++commands;
    } else if (line == ".TP") {
      ExpectVoice(command + " " + Unroff(lines[i + 1]), Unroff(lines[i + 2]));
      ++options;
    } else if (line == "\\fBExamples:\\fR") {
      with_examples.insert(command);
    }
  }
  EXPECT_GT(commands, 30);
  EXPECT_GT(options, 100);
  for (const std::vector<std::string>& path : Commands(man)) {
    const std::string name = "devmgr " + absl::StrJoin(path, " ");
    EXPECT_TRUE(with_examples.contains(name)) << name << " has no examples";
  }

  // At the end of --help, as kubectl prints them.
  const ProcessResult admit = RunDevmgr({"pods", "admit", "--help"});
  const size_t examples = admit.out.find("\nExamples:\n  # ");
  ASSERT_NE(examples, std::string::npos) << admit.out;
  EXPECT_TRUE(absl::StrContains(admit.out.substr(examples), "\n  devmgr pods admit ")) << admit.out;
}

TEST(ManPageTest, HasTheManSectionsAndEveryCommand) {
  const std::string man = ManPage();
  for (const char* line :
       {".TH DEVMGR 1 ", "\n.SH NAME\ndevmgr \\- ", "\n.SH SYNOPSIS\n", "\n.SH DESCRIPTION\n",
        "\n.SH OPTIONS\n", "\n.SH COMMANDS\n", "\n.SH \"EXIT STATUS\"\n", "\n.SH \"SEE ALSO\"\n",
        "\n.SS \"devmgr pods list\"\n", "\n.SS \"devmgr plugin fake\\-dra\"\n",
        "\n.SS \"devmgr completion\"\n", "\n.SS \"devmgr help\"\n"}) {
    EXPECT_TRUE(absl::StrContains(man, line)) << line;
  }
  // Every command of the program is in it: the bash completion script, made from the same tree,
  // knows the same commands ("    ['devmgr pods']='admit remove list options'").
  std::set<std::string> in_page;
  for (const std::vector<std::string>& path : Commands(man)) {
    in_page.insert("devmgr " + absl::StrJoin(path, " "));
  }
  const ProcessResult bash = RunDevmgr({"completion", "bash"});
  const std::string table = bash.out.substr(0, bash.out.find("declare -gA _devmgr_flags"));
  std::set<std::string> in_script;
  for (absl::string_view line : absl::StrSplit(table, '\n')) {
    if (!absl::ConsumePrefix(&line, "    ['")) continue;
    const size_t key_end = line.find("']='");
    ASSERT_NE(key_end, absl::string_view::npos) << line;
    for (absl::string_view name :
         absl::StrSplit(absl::StripSuffix(line.substr(key_end + 4), "'"), ' ', absl::SkipEmpty())) {
      in_script.insert(absl::StrCat(line.substr(0, key_end), " ", name));
    }
  }
  EXPECT_EQ(in_page, in_script);
  EXPECT_GT(in_page.size(), 30u);

  const std::string groff = Program("groff");
  if (groff.empty()) GTEST_SKIP() << "no groff here: the page's rendering is not checked";
  // -ww: every warning; the page must render without one.
  const ProcessResult text = RunProcess({groff, "-man", "-Tascii", "-ww", "-P-cbou"}, man);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.err, "");
  for (const char* rendered : {"NAME", "devmgr pods list [FLAGS]", "EXIT STATUS", "--root-dir DIR",
                               "source <(devmgr completion bash)"}) {
    EXPECT_TRUE(absl::StrContains(text.out, rendered)) << rendered << " not in\n" << text.out;
  }
}

// Completions: what a shell offers for each command line, one line per query in `script`'s
// output ("query|completion completion ..."), from the script `devmgr completion SHELL` prints.
class CompletionTest : public ::testing::Test {
 protected:
  // Script writes `devmgr completion shell` to a file and returns its path.
  std::string Script(const std::string& shell) {
    const ProcessResult script = RunDevmgr({"completion", shell});
    EXPECT_EQ(script.exit_code, 0) << script.err;
    const std::string path = dir_.Sub("completion." + shell).string();
    std::ofstream(path) << script.out;
    std::filesystem::create_directory(dir_.Sub("node-a"));
    std::ofstream(dir_.Sub("node.yaml")) << "{}\n";
    return path;
  }

  // Answers: each output line "query|a b c" as query -> {a, b, c}, sorted.
  static std::map<std::string, std::vector<std::string>> Answers(const std::string& out) {
    std::map<std::string, std::vector<std::string>> answers;
    for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
      const size_t bar = line.find('|');
      if (bar == absl::string_view::npos) continue;
      std::vector<std::string> words = absl::StrSplit(line.substr(bar + 1), ' ', absl::SkipEmpty());
      std::sort(words.begin(), words.end());
      answers[std::string(line.substr(0, bar))] = words;
    }
    return answers;
  }

  TempDir dir_;
};

using Words = std::vector<std::string>;

TEST_F(CompletionTest, BashCompletesCommandsFlagsAndValues) {
  const std::string bash = Program("bash");
  ASSERT_FALSE(bash.empty());
  const std::string script = Script("bash");
  const std::string dir = dir_.path().string();
  // c WORD...: completes the last word (a new word when it is ''), as bash does on TAB.
  const std::string run = R"(
source "$1" || exit 3
complete -p devmgr >/dev/null || exit 4
c() {
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    _devmgr devmgr "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    echo "$*|${COMPREPLY[*]}"
}
c devmgr po
c devmgr ''
c devmgr pods l
c devmgr pods list --ro
c devmgr pods list -o ''
c devmgr pods list --output = j
c devmgr bench --quick --samples 3 -o ''
c devmgr --version po
c devmgr completion ''
c devmgr help po
c devmgr help pods ''
c devmgr pods list --root-dir "$2/no"
c devmgr pods admit "$2/no"
c devmgr checkpoint verify -o json "$2/no"
)";
  const ProcessResult result =
      RunProcess({bash, "--norc", "--noprofile", "-c", run, "bash", script, dir});
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  EXPECT_EQ(result.err, "");
  auto answers = Answers(result.out);
  EXPECT_EQ(answers["devmgr po"], (Words{"podresources", "pods"}));
  EXPECT_TRUE(absl::c_linear_search(answers["devmgr "], "completion"));
  EXPECT_TRUE(absl::c_linear_search(answers["devmgr "], "serve"));
  EXPECT_EQ(answers["devmgr pods l"], (Words{"list"}));
  EXPECT_EQ(answers["devmgr pods list --ro"], (Words{"--root-dir"}));
  EXPECT_EQ(answers["devmgr pods list -o "], (Words{"json", "table", "wide", "yaml"}));
  EXPECT_EQ(answers["devmgr pods list --output = j"], (Words{"json"}));
  EXPECT_EQ(answers["devmgr bench --quick --samples 3 -o "], (Words{"json", "table"}));
  EXPECT_EQ(answers["devmgr --version po"], (Words{"podresources", "pods"}));
  EXPECT_EQ(answers["devmgr completion "], (Words{"bash", "fish", "zsh"}));
  EXPECT_EQ(answers["devmgr help po"], (Words{"podresources", "pods"}));
  EXPECT_EQ(answers["devmgr help pods "], (Words{"admit", "list", "options", "remove"}));
  EXPECT_EQ(answers["devmgr pods list --root-dir " + dir + "/no"], (Words{dir + "/node-a"}));
  EXPECT_EQ(answers["devmgr pods admit " + dir + "/no"],
            (Words{dir + "/node-a", dir + "/node.yaml"}));
  EXPECT_EQ(answers["devmgr checkpoint verify -o json " + dir + "/no"],
            (Words{dir + "/node-a", dir + "/node.yaml"}));
}

TEST_F(CompletionTest, ZshOffersCommandsFlagsAndValues) {
  const std::string zsh = Program("zsh");
  if (zsh.empty()) GTEST_SKIP() << "no zsh here";
  const std::string script = Script("zsh");
  // The completion system's functions, stubbed: each prints what it was asked to offer.
  const std::string run = R"(
_describe() { local -a items; items=("${(@P)${@[-1]}}"); reply+=("${items[@]%%:*}") }
compadd() { [[ $1 == -a ]] && reply+=("${(@P)2}") }
_files() { reply+=("files${*:+:$*}") }
_message() { : }
compset() { : }
source "$1" || exit 3
c() {
    local -a words reply; words=("$@"); local CURRENT=$#
    _devmgr
    print -r -- "${(j: :)words}|${(j: :)reply}"
}
c devmgr po
c devmgr pods ''
c devmgr pods list --ro
c devmgr pods list -o ''
c devmgr pods list --output=
c devmgr help pods ''
c devmgr completion ''
c devmgr pods list --root-dir ''
c devmgr pods admit ''
)";
  const ProcessResult result = RunProcess({zsh, "-f", "-c", run, "zsh", script});
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  EXPECT_EQ(result.err, "");
  auto answers = Answers(result.out);
  // zsh filters by what is typed itself: the function offers every command there.
  EXPECT_TRUE(absl::c_linear_search(answers["devmgr po"], "pods")) << result.out;
  EXPECT_TRUE(absl::c_linear_search(answers["devmgr po"], "podresources")) << result.out;
  EXPECT_EQ(answers["devmgr pods "], (Words{"admit", "list", "options", "remove"}));
  EXPECT_TRUE(absl::c_linear_search(answers["devmgr pods list --ro"], "--root-dir"));
  EXPECT_EQ(answers["devmgr pods list -o "], (Words{"json", "table", "wide", "yaml"}));
  EXPECT_EQ(answers["devmgr pods list --output="], (Words{"json", "table", "wide", "yaml"}));
  EXPECT_EQ(answers["devmgr help pods "], (Words{"admit", "list", "options", "remove"}));
  EXPECT_EQ(answers["devmgr completion "], (Words{"bash", "fish", "zsh"}));
  EXPECT_EQ(answers["devmgr pods list --root-dir "], (Words{"files:-/"}));
  EXPECT_EQ(answers["devmgr pods admit "], (Words{"files"}));
}

TEST_F(CompletionTest, FishCompletesCommandsFlagsAndValues) {
  const std::string fish = Program("fish");
  if (fish.empty()) GTEST_SKIP() << "no fish here";
  const std::string script = Script("fish");
  const std::string dir = dir_.path().string();
  // complete -C: what fish offers for a command line, "completion<TAB>description" a line.
  const std::string run = R"(
source $argv[1]; or exit 3
function c
    set -l found
    for line in (complete -C "$argv[1]")
        set -a found (string split -f1 \t -- $line)
    end
    echo "$argv[1]|$found"
end
c 'devmgr po'
c 'devmgr pods l'
c 'devmgr pods list --ro'
c 'devmgr pods list -o '
c 'devmgr help pods '
c 'devmgr completion '
c "devmgr pods list --root-dir $argv[2]/no"
c "devmgr pods admit $argv[2]/no"
)";
  const ProcessResult result =
      RunProcess({"/usr/bin/env", "HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "XDG_DATA_HOME=" + dir,
                  fish, "--no-config", "-c", run, script, dir});
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  auto answers = Answers(result.out);
  EXPECT_EQ(answers["devmgr po"], (Words{"podresources", "pods"})) << result.out;
  EXPECT_EQ(answers["devmgr pods l"], (Words{"list"}));
  EXPECT_EQ(answers["devmgr pods list --ro"], (Words{"--root-dir"}));
  EXPECT_EQ(answers["devmgr pods list -o "], (Words{"json", "table", "wide", "yaml"}));
  EXPECT_EQ(answers["devmgr help pods "], (Words{"admit", "list", "options", "remove"}));
  EXPECT_EQ(answers["devmgr completion "], (Words{"bash", "fish", "zsh"}));
  EXPECT_EQ(answers["devmgr pods list --root-dir " + dir + "/no"], (Words{dir + "/node-a/"}));
  EXPECT_EQ(answers["devmgr pods admit " + dir + "/no"],
            (Words{dir + "/node-a/", dir + "/node.yaml"}));
}

}  // namespace
}  // namespace devmgr::cli
