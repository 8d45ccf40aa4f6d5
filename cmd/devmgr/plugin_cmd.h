// `devmgr plugin fake|generic|fake-dra`: device plugins built on the SDK (deviceplugin/) and a
// fake DRA driver (plugins/fakedra), run until SIGTERM or SIGINT, after which they remove their
// sockets (and CDI files) and exit 0.
//
//   devmgr plugin fake --resource example.com/gpu --devices 8 [--numa-nodes 2] [--registry]
//       [--id-prefix P] [--flip-every 30s] [--preferred none|first|numa]
//       [--allocate-latency 300ms] [--allocate-error MSG] [--allocate-hang] [--cdi-dir DIR]
//     SIGUSR1 flips the health of the next device.
//   devmgr plugin generic --config FILE [--rescan-interval 5s] [--registry] [--cdi-dir DIR]
//   devmgr plugin fake-dra --driver gpu.example.com [--devices 2] [--node NAME]
//       [--versions v1,v1beta1] [--prepare-latency 2s] [--prepare-error MSG] [--prepare-hang]
//       [--unprepare-error MSG] [--cdi-dir DIR]
//     registers through DIR/plugins_registry, serves DIR/plugins/<driver>/dra.sock (DRAPlugin and
//     DRAResourceHealth) and reads the claims it prepares from the daemon's admin API
//     (DIR/devmgr.sock). SIGUSR1 flips the health of the next device.
//
// All take --root-dir DIR (default /var/lib/kubelet): kubelet.sock and the device plugins'
// sockets are in DIR/device-plugins, or DIR/plugins_registry with --registry.
#pragma once

#include "CLI/CLI.hpp"
#include "cmd/devmgr/command.h"

namespace devmgr::cli {

// AddPluginCommand registers the `plugin` subcommand tree on `app`; the command that runs stores
// its exit code in `result`, which must outlive `app`'s parse.
void AddPluginCommand(CLI::App& app, CommandResult& result);

}  // namespace devmgr::cli
