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
                       grpc::ClientContext& context) {
  if (CutBackoffIfServed(channel, socket)) context.set_wait_for_ready(true);
}

void CutBackoffOncePerSocketFile(grpc::Channel& channel, const std::filesystem::path& socket,
                                 std::optional<FileId>& cut_for) {
  if (channel.GetState(/*try_to_connect=*/false) != GRPC_CHANNEL_TRANSIENT_FAILURE) return;
  const std::optional<FileId> file = StatId(socket);
  if (file.has_value() && file != cut_for && CutBackoffIfServed(channel, socket)) cut_for = file;
}

}  // namespace devmgr
