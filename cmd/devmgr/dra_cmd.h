// `devmgr dra checkpoint verify|show FILE`: read a `dra_manager_state` written by devmgr or by a
// real kubelet, check its checksum and show the prepared claims it holds.
#pragma once

#include "CLI/CLI.hpp"
#include "cmd/devmgr/command.h"

namespace devmgr::cli {

// AddDraCommand registers the `dra` subcommand tree on `app`; the command that runs stores its
// exit code in `result`, which must outlive `app`'s parse.
void AddDraCommand(CLI::App& app, CommandResult& result);

}  // namespace devmgr::cli
