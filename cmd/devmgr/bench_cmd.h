// `devmgr bench`: end-to-end measurements of a real `devmgr serve` (a child process) with real
// SDK plugins on unix sockets in a temporary root, each beside its floor measured in the same
// run: the cheapest way to do the same physical work. Prints median, p99, the floor's median
// and their ratio, as a table or with -o json.
//
//   devmgr bench [--quick] [--samples N] [--devices N] [--pods P] [--checkpoint-entries K]
//       [--plugins X] [--plugin-devices Y] [--memory-pods Z] [--admission-devices D]
//       [--admitted-pods A] [-o json]
//
// --quick sets tiny sizes (for `make test`); the defaults are the sizes of docs/PERFORMANCE.md.
// Exit 0 when every measurement ran, 1 when one failed (the reason on stderr), 2 for bad usage.
// This is the command line only: the measurements are bench/driver/ (bench.h).
#pragma once

#include "CLI/CLI.hpp"
#include "cmd/devmgr/command.h"

namespace devmgr::cli {

void AddBenchCommand(CLI::App& app, CommandResult& result);

}  // namespace devmgr::cli
