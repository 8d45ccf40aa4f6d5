// SliceWiper: how the DRA manager removes the ResourceSlices that drivers published for this
// node, which the host implements (against the API server, or a node-local store of slices).
// The kubelet wipes them at start-up (no driver is usable until it registers again, so nothing
// should be scheduled against the node's old slices) and when a driver has had no connected
// endpoint for the wiping delay (dra/slice_cleanup.h).
#pragma once

#include <string>

#include "absl/status/status.h"

namespace devmgr::dra {

class SliceWiper {
 public:
  virtual ~SliceWiper() = default;
  // WipeResourceSlices deletes the node's ResourceSlices of `driver_name`, or of every driver
  // when it is empty (upstream: deletecollection with field selector spec.nodeName, plus
  // spec.driver). NotFound counts as done; any other error is retried with a backoff. Called on
  // the cleanup's thread, never with a lock of the manager held; may block for a bounded time.
  virtual absl::Status WipeResourceSlices(const std::string& driver_name) = 0;
};

}  // namespace devmgr::dra
