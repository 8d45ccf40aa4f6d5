// ReconnectIfServed: the first call to a unix socket's peer that came back is not refused.
//
// A gRPC channel whose connection failed waits out a reconnect backoff (a second after the
// first failure, growing to two minutes) before it tries again, and fails its calls at once
// meanwhile, with the error of its last try ("No such file or directory"). A peer that began to
// serve since, or came back (a DRA driver whose service listens after it registered, a daemon
// that restarted), would be refused that long.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <filesystem>
#include <optional>

#include "common/file_id.h"

namespace devmgr {

// CutBackoffIfServed: when `channel`, which dials the unix socket `socket`, has failed to connect
// and a process accepts connections at `socket` by now, the backoff is cut short: the channel
// connects again at once. True when it was. A channel that is ready, connecting or idle, or
// whose peer is still away, is left as it is.
bool CutBackoffIfServed(grpc::Channel& channel, const std::filesystem::path& socket);

// ReconnectIfServed: CutBackoffIfServed, and when the backoff was cut, the call `context` is
// for waits for the connection (wait for ready), up to its deadline or its cancellation.
// Otherwise the call fails at once, as it would have.
void ReconnectIfServed(grpc::Channel& channel, const std::filesystem::path& socket,
                       grpc::ClientContext& context);

// CutBackoffOncePerSocketFile: CutBackoffIfServed for what checks a channel again and again (a
// connection monitor): not again for the socket file it last cut the backoff for, which
// `cut_for` keeps (nullopt at first). A peer that accepts connections but never becomes ready
// (a frozen process, one that is not a gRPC server) is then tried at gRPC's backoff, not at every
// check, and is not sent a test connection at every check either; a peer that comes back binds
// a new socket file, whose backoff is cut again.
void CutBackoffOncePerSocketFile(grpc::Channel& channel, const std::filesystem::path& socket,
                                 std::optional<FileId>& cut_for);

}  // namespace devmgr
