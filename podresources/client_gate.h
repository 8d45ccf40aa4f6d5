// ClientGate: who a PodResources request comes from, whether it may proceed under the rate
// limit, and how many Watch streams that client holds. Every service on the socket asks it
// first, so that List, Get, GetAllocatableResources and Watch share one budget per client.
#pragma once

#include <grpcpp/server_context.h>

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "podresources/peer_credentials.h"
#include "podresources/rate_limiter.h"

namespace devmgr::podresources {

// The status of a request over the rate limit, as upstream's interceptor returns it.
grpc::Status RateLimitedStatus();

class ClientGate {
 public:
  // `clock` must outlive the gate; `listener` may be null (then clients are told apart by
  // gRPC's peer string only) and, if set, must outlive the gate.
  ClientGate(const RateLimitOptions& rate_limit, int max_watch_streams_per_client,
             const Clock& clock, const CredentialsListener* listener);

  // Identify names the client: "uid=<uid> pid=<pid>" from the socket's credentials, or the
  // gRPC peer string when none are known. Thread-safe.
  std::string Identify(const grpc::ServerContextBase& context) const;

  // AllowRequest: `client` may make one more request now (takes a token). Thread-safe.
  bool AllowRequest(const std::string& client);

  // AcquireStream counts one more open Watch stream for `client`; false (nothing counted) if
  // it already holds the maximum. Every true must be matched by one ReleaseStream.
  bool AcquireStream(const std::string& client) ABSL_LOCKS_EXCLUDED(mu_);
  void ReleaseStream(const std::string& client) ABSL_LOCKS_EXCLUDED(mu_);

  int max_watch_streams_per_client() const { return max_streams_; }

 private:
  const CredentialsListener* const listener_;
  const int max_streams_;
  RateLimiter limiter_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, int> streams_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::podresources
