// Repeated gRPC calls, timed: TimeCalls for the latency of each of a number of calls,
// TimeAlternately for two calls (a path and its floor) taken in turn, CallsPerSecond for the
// rate of calls made one after the other for a while. All run on the caller's thread and stop
// at the first failed call.
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

// TimeAlternately times `samples` calls of `call` and as many of `floor_call`, one of each in
// turn (`before`, if given, runs before each call of `call`, outside the time measured), so
// that a path and its floor see the machine in the same state: measured one after the other,
// the floor alone drifted by half between runs on the 2-core machine.
template <typename Response>
absl::Status TimeAlternately(
    int samples, const std::function<grpc::Status(grpc::ClientContext&, Response&)>& call,
    const std::function<grpc::Status(grpc::ClientContext&, Response&)>& floor_call,
    const std::function<absl::Status(const Response&)>& check, std::vector<double>& micros,
    std::vector<double>& floor_micros, const std::function<absl::Status()>& before = {}) {
  std::string unused;
  for (int i = 0; i < samples; ++i) {
    if (absl::Status status = TimeCalls<Response>(1, call, check, micros, unused, before);
        !status.ok()) {
      return status;
    }
    if (absl::Status status = TimeCalls<Response>(1, floor_call, check, floor_micros, unused);
        !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

}  // namespace devmgr::bench
