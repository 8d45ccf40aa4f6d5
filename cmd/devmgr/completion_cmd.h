// `devmgr completion bash|zsh|fish`: a shell completion script generated from the command tree
// (command_tree.h), so that it completes exactly the commands, flags and values devmgr has: the
// commands under the one typed so far, its flags after "-", the values of a flag (files, folders,
// or the set it accepts: -o json), and `devmgr help`'s command names. `meson install` installs
// the three scripts where bash-completion, zsh and fish look for them.
#pragma once

#include <string>

#include "CLI/CLI.hpp"
#include "cmd/devmgr/command.h"
#include "cmd/devmgr/command_tree.h"

namespace devmgr::cli {

// The scripts for the program whose tree is `root`.
std::string BashCompletion(const CommandInfo& root);
std::string ZshCompletion(const CommandInfo& root);
std::string FishCompletion(const CommandInfo& root);

// AddCompletionCommand adds `devmgr completion SHELL` under `app` (the program).
void AddCompletionCommand(CLI::App& app, CommandResult& result);

}  // namespace devmgr::cli
