// `devmgr man`: devmgr(1), the man page, generated from the command tree (command_tree.h) so that
// it lists exactly the commands, flags, defaults and examples that --help shows. The build runs
// it to make the devmgr.1 that `meson install` puts under share/man/man1.
#pragma once

#include <string>

#include "CLI/CLI.hpp"
#include "cmd/devmgr/command.h"
#include "cmd/devmgr/command_tree.h"

namespace devmgr::cli {

// ManPage: devmgr(1) in roff (the man macros) for the program whose tree is `root`.
std::string ManPage(const CommandInfo& root, const std::string& version);

// AddManCommand adds `devmgr man` under `app` (the program).
void AddManCommand(CLI::App& app, CommandResult& result);

}  // namespace devmgr::cli
