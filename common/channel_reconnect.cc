#include "common/channel_reconnect.h"

#include "common/unix_socket.h"

namespace devmgr {

void ReconnectIfServed(grpc::Channel& channel, const std::filesystem::path& socket,
                       absl::Time deadline) {
  if (channel.GetState(/*try_to_connect=*/false) != GRPC_CHANNEL_TRANSIENT_FAILURE) return;
  if (ConnectError(socket) != 0) return;
  grpc::experimental::ChannelResetConnectionBackoff(&channel);
  channel.WaitForConnected(absl::ToChronoTime(deadline));
}

}  // namespace devmgr
