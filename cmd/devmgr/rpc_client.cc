#include "cmd/devmgr/rpc_client.h"

#include <cerrno>
#include <chrono>
#include <iostream>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cmd/devmgr/command.h"
#include "common/errno_status.h"
#include "common/unix_socket.h"
#include "node/admin_service.h"
#include "podresources/client.h"

namespace devmgr::cli {
namespace {

// Absent: no file at `socket`, so nothing can listen there: said at once, not after the timeout.
bool Absent(const std::filesystem::path& socket) {
  std::error_code error;
  return !std::filesystem::exists(socket, error);
}

// "METHOD failed: message (CODE)", or "METHOD failed (CODE)" for a status without a message
// (a server without the method answers UNIMPLEMENTED with none).
std::string FailedText(absl::string_view method, const grpc::Status& status) {
  if (status.error_message().empty()) {
    return absl::StrCat(method, " failed (", CodeName(status), ")");
  }
  return absl::StrCat(method, " failed: ", status.error_message(), " (", CodeName(status), ")");
}

// ReadTimeout reads --timeout into `connection`; false, with its exit code set, when the text
// cannot be a call's timeout.
bool ReadTimeout(const std::string& timeout_text, Connection& connection) {
  std::string problem;
  if (!absl::ParseDuration(timeout_text, &connection.timeout)) {
    problem = absl::StrCat("invalid --timeout ", timeout_text, " (use e.g. 300ms, 10s, 1m)");
  } else if (connection.timeout <= absl::ZeroDuration()) {
    problem = absl::StrCat("--timeout must be positive, not ", timeout_text);
  } else if (connection.timeout == absl::InfiniteDuration()) {
    // A call's deadline is a point in time: "inf" has none to give.
    problem = "--timeout must be finite: a call needs a deadline";
  }
  if (problem.empty()) return true;
  connection.exit_code = Fail(kExitUsage, problem);
  return false;
}

}  // namespace

Connection Connect(const std::filesystem::path& socket, const std::string& timeout_text,
                   int max_receive_message_bytes) {
  Connection connection;
  if (!ReadTimeout(timeout_text, connection)) return connection;
  if (Absent(socket)) {
    connection.exit_code =
        Fail(kExitUsage, absl::StrCat("no socket at ", socket.string(),
                                      " (is the kubelet or devmgr serve running there?)"));
    return connection;
  }
  // Something that is no socket (a folder, a regular file) is said to be none: connecting to it
  // refuses as a socket nobody listens on does.
  if (std::error_code type_error; !std::filesystem::is_socket(socket, type_error) && !type_error) {
    connection.exit_code =
        Fail(kExitUsage, absl::StrCat("cannot connect to ", socket.string(), ": not a socket"));
    return connection;
  }
  // A socket nothing accepts on (one a killed daemon left) refuses at once: said at once too,
  // with the reason, rather than after the timeout.
  std::error_code absolute_error;
  if (const int error = ConnectError(std::filesystem::absolute(socket, absolute_error));
      error != 0 && error != EINVAL) {
    connection.exit_code = Fail(
        kExitUsage, absl::StrCat("cannot connect to ", socket.string(), ": ",
                                 ErrnoStatus(error, "connect").message(),
                                 error == ECONNREFUSED
                                     ? " (nothing listens there: is the kubelet or devmgr serve "
                                       "running?)"
                                     : ""));
    return connection;
  }
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      podresources::Dial({socket, connection.timeout, max_receive_message_bytes});
  if (!channel.ok()) {
    connection.exit_code = Fail(kExitUsage, channel.status().message());
    return connection;
  }
  connection.channel = *std::move(channel);
  return connection;
}

Connection ConnectDaemon(const std::filesystem::path& root_dir, const std::string& timeout_text) {
  const std::filesystem::path socket = root_dir / "devmgr.sock";
  if (Connection checked; !ReadTimeout(timeout_text, checked)) return checked;
  if (Absent(socket)) {
    Connection connection;
    connection.exit_code = Fail(
        kExitUsage, absl::StrCat("no daemon at ", socket.string(), " (is devmgr serve running?)"));
    return connection;
  }
  return Connect(socket, timeout_text, 64 << 20);
}

std::string CodeName(const grpc::Status& status) {
  // gRPC's codes and Abseil's are the same numbers.
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code()));
}

int DaemonFailure(absl::string_view method, const grpc::Status& status,
                  const grpc::ClientContext& context) {
  if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
    return Fail(kExitUsage, status.error_message());
  }
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
      std::chrono::system_clock::now() >= context.deadline()) {
    return Fail(
        kExitUsage,
        absl::StrCat(method, ": no answer from the daemon within --timeout (", CodeName(status),
                     "); it goes on with the call, and one that changes the node may still take "
                     "effect: `devmgr pods list` shows what the node holds"));
  }
  // The transport's codes for a peer that went away, in an answer the daemon did not mark.
  const bool cut = (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                    status.error_code() == grpc::StatusCode::CANCELLED) &&
                   !context.GetServerTrailingMetadata().contains(node::kAdminAnsweredKey);
  if (cut) {
    return Fail(kExitUsage,
                absl::StrCat(method, ": no answer from the daemon (", status.error_message(), " (",
                             CodeName(status),
                             ")); it may have gone down during the call, and one that changes "
                             "the node may have taken effect: `devmgr pods list` shows what the "
                             "node holds"));
  }
  return Fail(kExitNo, FailedText(method, status));
}

int RpcFailure(absl::string_view method, const grpc::Status& status) {
  const bool unreachable = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                           status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
  return Fail(unreachable ? kExitUsage : kExitNo, FailedText(method, status));
}

void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) {
  // absl's arithmetic holds a timeout of ten thousand years at the clock's end; adding it to
  // std::chrono's clock would overflow into the past.
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

}  // namespace devmgr::cli
