#include "cmd/devmgr/rpc_client.h"

#include <google/protobuf/util/json_util.h>

#include <iostream>

#include "absl/strings/str_cat.h"
#include "cmd/devmgr/command.h"
#include "podresources/client.h"

namespace devmgr::cli {

Connection Connect(const std::filesystem::path& socket, const std::string& timeout_text,
                   int max_receive_message_bytes) {
  Connection connection;
  if (!absl::ParseDuration(timeout_text, &connection.timeout) ||
      connection.timeout <= absl::ZeroDuration()) {
    connection.exit_code = Fail(
        kExitUsage, absl::StrCat("invalid --timeout ", timeout_text, " (use e.g. 300ms, 10s, 1m)"));
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
  std::error_code error;
  if (!std::filesystem::exists(socket, error)) {
    Connection connection;
    connection.exit_code = Fail(
        kExitUsage, absl::StrCat("no daemon at ", socket.string(), " (is devmgr serve running?)"));
    return connection;
  }
  return Connect(socket, timeout_text, 64 << 20);
}

int DaemonFailure(absl::string_view method, const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
    return Fail(kExitUsage, status.error_message());
  }
  return Fail(kExitNo, absl::StrCat(method, " failed: ", status.error_message(), " (code ",
                                    static_cast<int>(status.error_code()), ")"));
}

int RpcFailure(absl::string_view method, const grpc::Status& status) {
  const bool unreachable = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                           status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
  return Fail(unreachable ? kExitUsage : kExitNo,
              absl::StrCat(method, " failed: ", status.error_message(), " (code ",
                           static_cast<int>(status.error_code()), ")"));
}

void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) {
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
}

void PrintJson(const google::protobuf::Message& message, bool pretty) {
  google::protobuf::util::JsonPrintOptions json_options;
  json_options.add_whitespace = pretty;
  std::string json;
  // Our own messages always convert; a failure here would be a broken invariant.
  if (!google::protobuf::util::MessageToJsonString(message, &json, json_options).ok()) {
    json = "{}";
  }
  // add_whitespace ends with a newline already.
  std::cout << json << (pretty ? "" : "\n");
}

}  // namespace devmgr::cli
