#include "common/plugin_channel.h"

#include <grpc/grpc.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "common/unix_socket.h"

namespace devmgr {

grpc::ChannelArguments PluginChannelArguments() {
  grpc::ChannelArguments args;
  args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_ENABLE_CHANNELZ, 0);
  return args;
}

std::shared_ptr<grpc::Channel> PluginChannel(const std::filesystem::path& socket,
                                             const grpc::ChannelArguments& args) {
  return grpc::CreateCustomChannel(UnixTarget(socket), grpc::InsecureChannelCredentials(), args);
}

}  // namespace devmgr
