// `devmgr slices list|get`: the ResourceSlices DRA drivers published into the local store of a
// `devmgr serve` daemon (a node without a cluster), as a table or as the Kubernetes JSON.
#pragma once

#include "CLI/CLI.hpp"
#include "cmd/devmgr/command.h"

namespace devmgr::cli {

// AddSlicesCommand registers `slices` on `app`; the command that runs stores its exit code in
// `result`, which must outlive `app`'s parse.
void AddSlicesCommand(CLI::App& app, CommandResult& result);

}  // namespace devmgr::cli
