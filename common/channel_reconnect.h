// ReconnectIfServed: the first call to a unix socket's peer that came back is not refused.
//
// A gRPC channel whose connection failed waits out a reconnect backoff (a second after the
// first failure, growing to two minutes) before it tries again, and fails its calls at once
// meanwhile, with the error of its last try ("No such file or directory"). A peer that began to
// serve since, or came back (a DRA driver whose service listens after it registered, a daemon
// that restarted), would be refused that long.
#pragma once

#include <grpcpp/channel.h>

#include <filesystem>

#include "absl/time/time.h"

namespace devmgr {

// CutBackoffIfServed: when `channel`, which dials the unix socket `socket`, has failed to connect
// and a process accepts connections at `socket` by now, the backoff is cut short: the channel
// connects again at once. True when it was. A channel that is ready, connecting or idle, or
// whose peer is still away, is left as it is.
bool CutBackoffIfServed(grpc::Channel& channel, const std::filesystem::path& socket);

// ReconnectIfServed: CutBackoffIfServed, then waits for the connection, up to `deadline`, when
// the backoff was cut. Otherwise a call made next fails at once, as it would have.
void ReconnectIfServed(grpc::Channel& channel, const std::filesystem::path& socket,
                       absl::Time deadline);

}  // namespace devmgr
