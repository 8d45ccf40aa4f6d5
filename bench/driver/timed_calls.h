// Repeated gRPC calls, timed: TimeCalls for the latency of each of a number of calls,
// CallsPerSecond for the rate of calls made one after the other for a while. Both run on the
// caller's thread and stop at the first failed call.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/driver/harness.h"

namespace devmgr::bench {

// CallsPerSecond runs `call` for `seconds` and returns how many it made per second.
absl::StatusOr<double> CallsPerSecond(double seconds, const std::function<absl::Status()>& call);

// TimeCalls makes `samples` calls of `call` (which fills a Response and returns the call's
// status), checks every answer with `check`, and keeps the bytes of the first in `serialised`
// (for the bare server that answers with the same). `before`, if given, runs before each call,
// outside the time measured.
template <typename Response>
absl::Status TimeCalls(int samples,
                       const std::function<grpc::Status(grpc::ClientContext&, Response&)>& call,
                       const std::function<absl::Status(const Response&)>& check,
                       std::vector<double>& micros, std::string& serialised,
                       const std::function<absl::Status()>& before = {}) {
  for (int i = 0; i < samples; ++i) {
    if (before) {
      if (absl::Status status = before(); !status.ok()) return status;
    }
    const auto start = Clock::now();
    grpc::ClientContext context;
    SetDeadline(context);
    Response response;
    if (absl::Status status = FromGrpc("call", call(context, response)); !status.ok()) {
      return status;
    }
    micros.push_back(MicrosSince(start));
    if (absl::Status status = check(response); !status.ok()) return status;
    if (serialised.empty()) serialised = response.SerializeAsString();
  }
  return absl::OkStatus();
}

}  // namespace devmgr::bench
