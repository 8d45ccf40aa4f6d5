#include "podresources/client.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/unix_socket.h"

namespace devmgr::podresources {

absl::StatusOr<std::shared_ptr<grpc::Channel>> Dial(const ClientOptions& options) {
  const std::filesystem::path path = std::filesystem::absolute(options.socket_path);
  if (absl::Status valid = ValidateSocketPath(path); !valid.ok()) return valid;
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(UnixTarget(path), grpc::InsecureChannelCredentials(), arguments);
  // absl's arithmetic holds a huge timeout at the clock's end; std::chrono's would overflow.
  const auto deadline = absl::ToChronoTime(absl::Now() + options.timeout);
  if (!channel->WaitForConnected(deadline)) {
    return absl::UnavailableError(absl::StrCat("cannot connect to ", path.string(), " within ",
                                               absl::FormatDuration(options.timeout)));
  }
  return channel;
}

}  // namespace devmgr::podresources
