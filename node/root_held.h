// RootHeld: the error Node::Start gives when another process serves its root folder (a devmgr
// that holds its lock, a kubelet that serves its sockets). It is FailedPrecondition, marked so
// that a caller tells it from an environment error of the same code: a file where a folder must
// be (ENOTDIR) or a symlink where a file must be (ELOOP) are FailedPrecondition too, and `devmgr
// serve` answers those as bad usage (exit 2), a held root as "no" (exit 1).
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace devmgr::node {

// RootHeldError: FailedPrecondition with `message`, marked held.
absl::Status RootHeldError(absl::string_view message);

// IsRootHeld: `status` came from RootHeldError.
bool IsRootHeld(const absl::Status& status);

}  // namespace devmgr::node
