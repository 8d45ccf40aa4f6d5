#include "cmd/devmgr/man_cmd.h"

#include <algorithm>
#include <iostream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace devmgr::cli {
namespace {

// Roff: `text` as roff text lines: backslashes and hyphens escaped (an escaped hyphen renders as
// the ASCII one that a flag copied from the page needs), and a line that would start with a
// control character made plain text.
std::string Roff(absl::string_view text) {
  std::string out;
  bool line_start = true;
  for (const char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    line_start = c == '\n';
    switch (c) {
      case '\\':
        out += "\\e";
        break;
      case '-':
        out += "\\-";
        break;
      default:
        out += c;
    }
  }
  return out;
}

bool IsHelpFlag(const OptionInfo& option) {
  return !option.positional &&
         std::find(option.names.begin(), option.names.end(), "--help") != option.names.end();
}

// Synopsis: "devmgr pods admit [FLAGS] FILE", as bold command words and italic arguments.
std::string Synopsis(const CommandInfo& command) {
  std::string out = absl::StrCat("\\fB", Roff(CommandLine(command.path)), "\\fR");
  if (!command.commands.empty()) absl::StrAppend(&out, " \\fICOMMAND\\fR");
  absl::StrAppend(&out, " [\\fIFLAGS\\fR]");
  for (const OptionInfo& option : command.options) {
    if (!option.positional) continue;
    std::string name = absl::StrCat("\\fI", Roff(absl::AsciiStrToUpper(option.names.front())),
                                    "\\fR", option.repeatable ? "..." : "");
    absl::StrAppend(&out, " ", option.required ? name : absl::StrCat("[", name, "]"));
  }
  return out;
}

// OptionItem: one flag or argument as a tagged paragraph.
std::string OptionItem(const OptionInfo& option) {
  std::string tag;
  if (option.positional) {
    tag = absl::StrCat("\\fI", Roff(absl::AsciiStrToUpper(option.names.front())), "\\fR");
  } else {
    tag = absl::StrJoin(option.names, ", ", [](std::string* out, const std::string& name) {
      absl::StrAppend(out, "\\fB", Roff(name), "\\fR");
    });
    if (option.takes_value && !option.label.empty()) {
      absl::StrAppend(&tag, " \\fI", Roff(option.label), "\\fR");
    }
  }
  if (option.repeatable) absl::StrAppend(&tag, "...");
  // The description on a line of its own, what the tree adds to it on the next.
  std::vector<std::string> notes;
  if (!option.default_value.empty())
    notes.push_back(absl::StrCat("default: ", option.default_value));
  // The choices, unless the description already names each one.
  if (std::any_of(option.choices.begin(), option.choices.end(), [&](const std::string& choice) {
        return !absl::StrContains(option.description, choice);
      })) {
    notes.push_back("one of: " + absl::StrJoin(option.choices, ", "));
  }
  if (option.required && !option.positional) notes.emplace_back("required");
  std::string out = absl::StrCat(".TP\n", tag, "\n", Roff(option.description), "\n");
  if (!notes.empty())
    absl::StrAppend(&out, Roff(absl::StrCat("(", absl::StrJoin(notes, "; "), ")")), "\n");
  return out;
}

// Examples: the footer SetExamples made, its "Examples:" heading in bold and its lines as they
// are, indented.
std::string Examples(const std::string& footer) {
  if (footer.empty()) return "";
  std::string body = footer;
  std::string heading;
  if (const size_t newline = footer.find('\n'); newline != std::string::npos) {
    heading = footer.substr(0, newline);
    body = footer.substr(newline + 1);
  }
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(body, '\n')) {
    lines.emplace_back(absl::StripLeadingAsciiWhitespace(line));
  }
  return absl::StrCat(".PP\n\\fB", Roff(heading), "\\fR\n.RS 4\n.nf\n",
                      Roff(absl::StrJoin(lines, "\n")), "\n.fi\n.RE\n");
}

void Commands(const CommandInfo& command, std::string& out) {
  for (const CommandInfo& sub : command.commands) {
    absl::StrAppend(&out, ".SS \"", Roff(CommandLine(sub.path)), "\"\n", Roff(sub.description),
                    "\n.PP\n", Synopsis(sub), "\n");
    for (const OptionInfo& option : sub.options) {
      if (!IsHelpFlag(option)) absl::StrAppend(&out, OptionItem(option));
    }
    absl::StrAppend(&out, Examples(sub.footer));
    Commands(sub, out);
  }
}

constexpr char kExitStatus[] = R"(.SH "EXIT STATUS"
.TP
.B 0
Success.
.TP
.B 1
The answer is no: refused, checksum mismatch, not found, another daemon holds the root.
.TP
.B 2
Bad usage or unreadable input: an unknown command or flag, a malformed manifest, no daemon to
talk to, no answer from it within the timeout.
.PP
A failure always prints one line, \fBdevmgr: \fIreason\fR, on standard error.
)";

constexpr char kTail[] = R"(.SH FILES
.TP
.I /var/lib/kubelet
The default \fB\-\-root\-dir\fR: \fIdevice\-plugins/\fR, \fIplugins_registry/\fR,
\fIpod\-resources/\fR and the admin API socket \fIdevmgr.sock\fR are under it.
.SH "SEE ALSO"
\fBdevmgr help\fR \fICOMMAND\fR, and docs/CLI.md in devmgr's sources, the reference of every
command, flag and exit code.
)";

}  // namespace

std::string ManPage(const CommandInfo& root, const std::string& version) {
  std::string description = root.description;
  if (!description.empty()) description[0] = absl::ascii_tolower(description[0]);
  std::string out = absl::StrCat(
      ".\\\" devmgr(1), generated by `devmgr man` from devmgr's command tree: do not edit.\n",
      ".TH DEVMGR 1 \"\" \"devmgr ", Roff(version), "\" \"User Commands\"\n",
      // Flags and paths are neither hyphenated nor stretched.
      ".nh\n.ad l\n", ".SH NAME\n", "devmgr \\- ", Roff(description), "\n", ".SH SYNOPSIS\n",
      Synopsis(root), "\n", ".SH DESCRIPTION\n", Roff(root.description), ".\n", ".PP\n",
      "One program with commands in the style of kubectl and crictl: human tables by default,\n",
      "\\fB\\-o json\\fR for scripts. Durations are written 300ms, 30s, 5m; sizes in bytes.\n",
      "Every command that talks to a daemon or its sockets takes \\fB\\-\\-root\\-dir\\fR "
      "\\fIDIR\\fR.\n",
      "Flags are written \\fB\\-\\-flag\\fR \\fIvalue\\fR or \\fB\\-\\-flag\\fR=\\fIvalue\\fR.\n",
      ".SH OPTIONS\n");
  for (const OptionInfo& option : root.options) absl::StrAppend(&out, OptionItem(option));
  absl::StrAppend(&out, ".SH COMMANDS\n");
  Commands(root, out);
  absl::StrAppend(&out, kExitStatus, kTail);
  return out;
}

void AddManCommand(CLI::App& app, CommandResult& result) {
  CLI::App* man = app.add_subcommand("man", "Print devmgr's man page, devmgr(1), in roff");
  SetExamples(*man, {{"Read it without installing it", "devmgr man | man -l -"}});
  man->callback([&app, &result] {
    std::cout << ManPage(DescribeCommand(app), DEVMGR_VERSION);
    result.exit_code = kExitOk;
  });
}

}  // namespace devmgr::cli
