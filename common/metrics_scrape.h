// A client of MetricsHttpServer on a unix socket (Boost.Beast), for tools and tests that read
// the daemon's own figures (`devmgr bench` watches the device gauges through it) or ask its
// /healthz and /readyz.
#pragma once

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr {

// HttpAnswer: what the server answered.
struct HttpAnswer {
  int status = 0;
  std::string content_type;
  std::string body;
};

// HttpGetUnix sends `GET target` over the unix socket `socket` and returns the answer, whatever
// its status. Unavailable if the socket does not accept or the answer is not HTTP.
absl::StatusOr<HttpAnswer> HttpGetUnix(const std::filesystem::path& socket,
                                       absl::string_view target);

// ScrapeMetrics returns the body of GET /metrics (the Prometheus text); Unavailable as
// HttpGetUnix, and for an answer other than 200.
absl::StatusOr<std::string> ScrapeMetrics(const std::filesystem::path& socket);

}  // namespace devmgr
