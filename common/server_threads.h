// How many handler threads a gRPC sync server keeps between calls.
//
// A sync server polls for calls with a pool of threads that grows when a call takes the last
// idle poller and shrinks when a thread that finished its call finds the server's maximum of
// pollers already waiting. gRPC's maximum is 2, so with more than two calls at a time nearly
// every call beyond the second starts a thread and ends one, and on a node's admission path
// that thread churn was about 8 % of the daemon's CPU (docs/PERFORMANCE.md, "Handler threads").
#pragma once

#include <grpcpp/server_builder.h>

namespace devmgr {

// Threads that stay polling after their call, ready for the next one: more than the concurrent
// calls a node's clients make in practice (eight admitters in the benchmark). A thread beyond
// it still ends when its call does, so a burst leaves at most this many idle threads behind.
inline constexpr int kPollingThreadsKept = 16;

// KeepHandlerThreads sets `builder`'s sync server to keep kPollingThreadsKept polling threads.
inline void KeepHandlerThreads(grpc::ServerBuilder& builder) {
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              kPollingThreadsKept);
}

}  // namespace devmgr
