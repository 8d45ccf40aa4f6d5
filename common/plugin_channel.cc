#include "common/plugin_channel.h"

#include <grpc/grpc.h>

namespace devmgr {

grpc::ChannelArguments PluginChannelArguments() {
  grpc::ChannelArguments args;
  args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_ENABLE_CHANNELZ, 0);
  return args;
}

}  // namespace devmgr
