// What the client commands (`podresources`, `pods`, `dra claims`) share: dialing a unix socket with
// a bounded wait, call deadlines, and reporting a failed call with the command-line exit codes
// (printing is cmd/devmgr/printer.h's).
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace devmgr::cli {

// A connected client, or the exit code of the failure already reported.
struct Connection {
  std::shared_ptr<grpc::Channel> channel;
  absl::Duration timeout;
  int exit_code = 0;
};

// Connect dials `socket`, waiting at most `timeout_text` (a positive duration, also the
// deadline of each call). Failures are reported on stderr: a bad timeout or an unreachable
// socket exit 2; a socket file that does not exist fails at once instead of after the timeout.
Connection Connect(const std::filesystem::path& socket, const std::string& timeout_text,
                   int max_receive_message_bytes);

// ConnectDaemon dials the admin socket of the `devmgr serve` daemon under `root_dir`; a missing
// socket fails at once (exit 2) instead of after the timeout.
Connection ConnectDaemon(const std::filesystem::path& root_dir, const std::string& timeout_text);

// CodeName: the name of a call's status code, as gRPC's documentation and grpcurl write it
// ("RESOURCE_EXHAUSTED"); failures name it in parentheses after the message.
std::string CodeName(const grpc::Status& status);

// DaemonFailure reports a failed admin call made with `context`: a malformed request is bad
// input (2), and so is a call the daemon did not answer (2, nothing says it was refused): its
// own deadline passed (the daemon goes on with the call), or the daemon went down during it
// (UNAVAILABLE or CANCELLED without node::kAdminAnsweredKey). Every other failure is the
// daemon's "no" (1): UNAVAILABLE or a DEADLINE_EXCEEDED before the deadline that it answers
// come from a plugin or driver that died or hung during the call.
int DaemonFailure(absl::string_view method, const grpc::Status& status,
                  const grpc::ClientContext& context);

// RpcFailure reports a failed call: unreachable is usage (2), anything else a refusal (1).
int RpcFailure(absl::string_view method, const grpc::Status& status);

void SetDeadline(grpc::ClientContext& context, absl::Duration timeout);

}  // namespace devmgr::cli
