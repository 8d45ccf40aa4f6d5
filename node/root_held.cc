#include "node/root_held.h"

#include "absl/strings/cord.h"

namespace devmgr::node {
namespace {

// The payload's type URL; its value is empty.
constexpr absl::string_view kRootHeldPayload = "devmgr.io/node.RootHeld";

}  // namespace

absl::Status RootHeldError(absl::string_view message) {
  absl::Status status = absl::FailedPreconditionError(message);
  status.SetPayload(kRootHeldPayload, absl::Cord());
  return status;
}

bool IsRootHeld(const absl::Status& status) {
  return absl::IsFailedPrecondition(status) && status.GetPayload(kRootHeldPayload).has_value();
}

}  // namespace devmgr::node
