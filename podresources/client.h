// Dialing a PodResources socket as a monitoring client does: a unix socket target, a bounded
// wait for the connection, and a receive limit large enough for big nodes. Works against a
// real kubelet's socket as well as devmgr's.
#pragma once

#include <grpcpp/channel.h>

#include <filesystem>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace devmgr::podresources {

// The usual client defaults (upstream e2e: 10 s, 16 MiB); ours receives far more by default so
// that a node with 100,000 devices or 1,000 busy pods can be listed.
inline constexpr absl::Duration kDefaultDialTimeout = absl::Seconds(10);
inline constexpr int kDefaultMaxReceiveMessageBytes = 256 * 1024 * 1024;

struct ClientOptions {
  std::filesystem::path socket_path;
  absl::Duration timeout = kDefaultDialTimeout;
  int max_receive_message_bytes = kDefaultMaxReceiveMessageBytes;
};

// Dial connects to `options.socket_path` and waits until the channel is ready, at most
// `options.timeout`. InvalidArgument for a bad path; Unavailable if nothing answers in time.
// Blocks the calling thread.
absl::StatusOr<std::shared_ptr<grpc::Channel>> Dial(const ClientOptions& options);

}  // namespace devmgr::podresources
