// `devmgr dra allocate`: structured allocation of ResourceClaims from ResourceSlices and
// DeviceClasses read from files, as the scheduler would allocate them on one node; the claims
// printed with status.allocation, or (exit 1) "cannot allocate all claims", and with --explain
// why each device was or was not a candidate.
#pragma once

#include "CLI/CLI.hpp"
#include "cmd/devmgr/command.h"

namespace devmgr::cli {

// AddAllocateCommand registers `allocate` under the `dra` command.
void AddAllocateCommand(CLI::App& dra, CommandResult& result);

}  // namespace devmgr::cli
