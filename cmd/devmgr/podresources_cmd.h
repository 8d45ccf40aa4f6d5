// `devmgr podresources list | allocatable | get NAMESPACE NAME | watch`: a PodResources client
// for devmgr's socket and for a real kubelet's (watch needs devmgr). Talks to --socket PATH, or
// DIR/pod-resources/kubelet.sock with --root-dir DIR (default /var/lib/kubelet). Output is a
// table, or proto3 JSON with -o json. Exit 0 on success, 1 when the pod is not found or the
// server refuses, 2 for bad usage or an unreachable socket.
#pragma once

#include "CLI/CLI.hpp"
#include "cmd/devmgr/command.h"

namespace devmgr::cli {

// AddPodResourcesCommand registers the `podresources` subcommand tree on `app`; the command
// that runs stores its exit code in `result`, which must outlive `app`'s parse.
void AddPodResourcesCommand(CLI::App& app, CommandResult& result);

}  // namespace devmgr::cli
