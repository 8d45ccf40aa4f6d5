// `devmgr serve`: the node-side daemon (daemon.h) as a command. Runs until SIGTERM or SIGINT,
// then stops cleanly (streams closed, checkpoint written, sockets removed) and exits 0. SIGHUP
// reopens the --log-file. Exit 1 when another daemon holds the root folder, 2 for bad flags or
// a root folder it cannot use.
//
//   devmgr serve [--root-dir DIR] [--endpoint-grace 5m] [--max-message-bytes N]
//       [--podresources-qps 100] [--podresources-burst 10] [--podresources-shared-limit]
//       [--plugin-call-timeout 30s] [--admission-wait 30s] [--topology-policy none]
//       [--node-status-interval 10s] [--metrics-address ADDR] [--log-level info]
//       [--log-file PATH]
#pragma once

#include "CLI/CLI.hpp"
#include "cmd/devmgr/command.h"

namespace devmgr::cli {

void AddServeCommand(CLI::App& app, CommandResult& result);

}  // namespace devmgr::cli
