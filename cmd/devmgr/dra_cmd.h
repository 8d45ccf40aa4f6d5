// `devmgr dra`: `checkpoint verify|show FILE` reads a `dra_manager_state` written by devmgr or by
// a real kubelet; `claims` lists what a daemon has prepared; `allocate` (dra_allocate.h) runs the
// structured allocator over manifests.
#pragma once

#include "CLI/CLI.hpp"
#include "cmd/devmgr/command.h"

namespace devmgr::cli {

// AddDraCommand registers the `dra` subcommand tree on `app`; the command that runs stores its
// exit code in `result`, which must outlive `app`'s parse.
void AddDraCommand(CLI::App& app, CommandResult& result);

}  // namespace devmgr::cli
