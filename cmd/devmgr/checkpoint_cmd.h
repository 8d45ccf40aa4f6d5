// `devmgr checkpoint verify|show FILE`: read a kubelet_internal_checkpoint written by devmgr or
// by a real kubelet, check its checksum and show what it holds.
#pragma once

#include "CLI/CLI.hpp"
#include "cmd/devmgr/command.h"

namespace devmgr::cli {

// AddCheckpointCommand registers the `checkpoint` subcommand tree on `app`; the command that
// runs stores its exit code in `result`, which must outlive `app`'s parse.
void AddCheckpointCommand(CLI::App& app, CommandResult& result);

}  // namespace devmgr::cli
