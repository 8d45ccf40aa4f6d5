// The two verbs of every command that reads a checkpoint file (`devmgr checkpoint`, `devmgr dra
// checkpoint`): `verify FILE` (exit 0 valid, 1 checksum mismatch with both values, 2 unreadable
// or malformed) and `show FILE` (what it holds; exit 1 on a mismatch, after showing it). A
// command gives the parser of its format and its printers; reading the file, the exit codes and
// the mismatch text are here, once.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "cmd/devmgr/command.h"
#include "common/checksummed.h"
#include "common/file_store.h"

namespace devmgr::cli {

// `Parsed` has stored_checksum, computed_checksum and ChecksumMatches(), as
// checkpoint::ParsedCheckpoint and dra::ParsedCheckpoint do.
template <typename Parsed>
struct CheckpointVerbs {
  // What the file is, for "FILE is not a valid <kind>: ...".
  std::string kind;
  std::function<absl::StatusOr<Parsed>(absl::string_view bytes)> parse;
  // Print what verify and show say of a file that parsed.
  std::function<void(const std::string& file, const Parsed& parsed, OutputFormat format)> verify;
  std::function<void(const std::string& file, const Parsed& parsed, OutputFormat format)> show;
};

// AddCheckpointVerbs adds `verify` and `show` under `parent`; the verb that runs stores its exit
// code in `result`, which must outlive the parse.
template <typename Parsed>
void AddCheckpointVerbs(CLI::App& parent, const std::string& file_help,
                        const std::string& show_help, CheckpointVerbs<Parsed> verbs,
                        CommandResult& result) {
  struct Options {
    std::string file;
    OutputFormat format = OutputFormat::kTable;
  };
  auto options = std::make_shared<Options>();
  auto shared = std::make_shared<const CheckpointVerbs<Parsed>>(std::move(verbs));
  // Run reads and parses the file, then prints with `print`; the exit code says whether the
  // checksum matches.
  auto run = [options, shared](auto print) {
    absl::StatusOr<std::string> bytes = ReadWholeFile(options->file);
    if (!bytes.ok()) return Fail(kExitUsage, bytes.status().message());
    absl::StatusOr<Parsed> parsed = shared->parse(*bytes);
    if (!parsed.ok()) {
      return Fail(kExitUsage, absl::StrCat(options->file, " is not a valid ", shared->kind, ": ",
                                           parsed.status().message()));
    }
    ((*shared).*print)(options->file, *parsed, options->format);
    if (!parsed->ChecksumMatches()) {
      return Fail(kExitNo, absl::StrCat(options->file, ": ", ChecksumMismatchText(*parsed)));
    }
    return static_cast<int>(kExitOk);
  };
  CLI::App* verify =
      parent.add_subcommand("verify",
                            "Check the checksum: exit 0 valid, 1 mismatch (both values printed), "
                            "2 unreadable or malformed");
  verify->add_option("FILE", options->file, file_help)->required()->type_name("FILE");
  AddOutputFlag(*verify, options->format);
  verify->callback([run, &result] { result.exit_code = run(&CheckpointVerbs<Parsed>::verify); });
  CLI::App* show = parent.add_subcommand("show", show_help);
  show->add_option("FILE", options->file, file_help)->required()->type_name("FILE");
  AddOutputFlag(*show, options->format);
  show->callback([run, &result] { result.exit_code = run(&CheckpointVerbs<Parsed>::show); });
}

}  // namespace devmgr::cli
