#include "common/channel_reconnect.h"

#include "common/unix_socket.h"

namespace devmgr {

bool CutBackoffIfServed(grpc::Channel& channel, const std::filesystem::path& socket) {
  if (channel.GetState(/*try_to_connect=*/false) != GRPC_CHANNEL_TRANSIENT_FAILURE) return false;
  if (ConnectError(socket) != 0) return false;
  grpc::experimental::ChannelResetConnectionBackoff(&channel);
  return true;
}

void ReconnectIfServed(grpc::Channel& channel, const std::filesystem::path& socket,
                       absl::Time deadline) {
  if (CutBackoffIfServed(channel, socket)) {
    channel.WaitForConnected(absl::ToChronoTime(deadline));
  }
}

}  // namespace devmgr
