// What the API server cannot check one slice at a time and would make the published pool
// unusable (upstream's validation of the driver's resources): a device or counter set named twice
// in a pool, a device consuming from a counter set or counter the pool does not have. The
// controller reports it for that pool alone, writes none of its slices, and does not retry: only
// a new Update can fix it. The other pools are published as usual.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "resourceslice/driver_resources.h"

namespace devmgr::resourceslice {

// ValidatePool: InvalidArgument with upstream's text for the first problem found in pool `name`,
// and for a slice the API server would refuse for its devices alone (too many, a name that is
// not a DNS label), which upstream's controller learns only from each failed write.
absl::Status ValidatePool(const std::string& name, const Pool& pool);

}  // namespace devmgr::resourceslice
