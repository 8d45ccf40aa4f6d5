// `devmgr pods`: the client of a `devmgr serve` daemon's admin API (<root>/devmgr.sock).
//
//   devmgr pods admit [--root-dir DIR] FILE|-       admit a Kubernetes Pod manifest (YAML/JSON)
//   devmgr pods remove [--root-dir DIR] UID          free a pod's devices and forget it
//   devmgr pods list [--root-dir DIR]                admitted pods and their devices
//   devmgr pods options [--root-dir DIR] UID CONTAINER   one container's run options
//
// All take -o json and --timeout. Exit 0 on success; 1 when the daemon refuses (the reason on
// stderr, and nothing has changed) or the pod is not found; 2 for a malformed manifest, an
// unreadable file, no daemon, or no answer within --timeout (the daemon goes on with the call).
#pragma once

#include "CLI/CLI.hpp"
#include "cmd/devmgr/command.h"

namespace devmgr::cli {

void AddPodsCommand(CLI::App& app, CommandResult& result);

}  // namespace devmgr::cli
