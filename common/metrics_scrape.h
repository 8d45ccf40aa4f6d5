// ScrapeMetrics: a minimal client of MetricsHttpServer on a unix socket, for tools and tests
// that read the daemon's own figures (`devmgr bench` watches the device gauges through it).
#pragma once

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"

namespace devmgr {

// ScrapeMetrics sends GET /metrics over the unix socket `socket` and returns the body of the
// answer (the Prometheus text). Unavailable if the socket does not accept or the answer is not
// an HTTP 200.
absl::StatusOr<std::string> ScrapeMetrics(const std::filesystem::path& socket);

}  // namespace devmgr
