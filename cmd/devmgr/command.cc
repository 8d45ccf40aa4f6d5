#include "cmd/devmgr/command.h"

#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
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

namespace {

// The labels in the kubernetes.io and k8s.io namespaces that a kubelet may set on its Node
// itself (k8s.io/kubelet's KubeletLabels and KubeletLabelNamespaces, in their order).
constexpr absl::string_view kKubeletLabels[] = {"beta.kubernetes.io/arch",
                                                "beta.kubernetes.io/instance-type",
                                                "beta.kubernetes.io/os",
                                                "failure-domain.beta.kubernetes.io/region",
                                                "failure-domain.beta.kubernetes.io/zone",
                                                "kubernetes.io/arch",
                                                "kubernetes.io/hostname",
                                                "kubernetes.io/os",
                                                "node.kubernetes.io/instance-type",
                                                "topology.kubernetes.io/region",
                                                "topology.kubernetes.io/zone"};
constexpr absl::string_view kKubeletLabelNamespaces[] = {"kubelet.kubernetes.io",
                                                         "node.kubernetes.io"};

bool InNamespace(absl::string_view prefix, absl::string_view domain) {
  return prefix == domain || absl::EndsWith(prefix, absl::StrCat(".", domain));
}

// A key in the kubernetes.io or k8s.io namespace that is not one of the kubelet's own: the
// kubelet refuses it in its --node-labels (the NodeRestriction admission would too).
bool ReservedForOthers(absl::string_view key) {
  const size_t slash = key.find('/');
  const absl::string_view prefix = slash == absl::string_view::npos ? "" : key.substr(0, slash);
  if (!InNamespace(prefix, "kubernetes.io") && !InNamespace(prefix, "k8s.io")) return false;
  if (absl::c_linear_search(kKubeletLabels, key)) return false;
  return !absl::c_any_of(kKubeletLabelNamespaces,
                         [&](absl::string_view allowed) { return InNamespace(prefix, allowed); });
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ParseNodeLabels(
    const std::vector<std::string>& labels) {
  // As the kubelet reads its --node-labels: each side trimmed; then keys reserved for others
  // refused, then every key that is not a qualified name and value that is not a label's.
  std::map<std::string, std::string> out;
  std::set<std::string> reserved;
  std::vector<std::string> invalid;
  for (const std::string& label : labels) {
    const size_t equals = label.find('=');
    if (equals == std::string::npos || equals == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--node-label: \"", label, "\" is not KEY=VALUE"));
    }
    const std::string key(absl::StripAsciiWhitespace(absl::string_view(label).substr(0, equals)));
    const std::string value(
        absl::StripAsciiWhitespace(absl::string_view(label).substr(equals + 1)));
    if (ReservedForOthers(key)) reserved.insert(key);
    for (const auto& [part, errors] :
         {std::pair{&key, QualifiedNameErrors(key)}, std::pair{&value, LabelValueErrors(value)}}) {
      if (!errors.empty()) {
        invalid.push_back(absl::StrCat("'", *part, "' - ", absl::StrJoin(errors, ", ")));
      }
    }
    out[key] = value;
  }
  if (!reserved.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--node-label: unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [",
        absl::StrJoin(reserved, " "),
        "]\n--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix (",
        absl::StrJoin(kKubeletLabelNamespaces, ", "), ") or be in the specifically allowed set (",
        absl::StrJoin(kKubeletLabels, ", "), ")"));
  }
  if (!invalid.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-label: invalid node labels: ", absl::StrJoin(invalid, "; ")));
  }
  return out;
}

}  // namespace devmgr::cli
