// The channel arguments of every dial of a plugin's socket (a device plugin, a plugin found in
// plugins_registry, a DRA driver), and of a DRA driver's dials of the daemon: the parts the
// kubelet's gRPC dials have in common.
#pragma once

#include <grpcpp/support/channel_arguments.h>

namespace devmgr {

// PluginChannelArguments gives a channel:
//  - the authority "localhost", grpc-go's for a unix socket peer;
//  - a connection of its own, as each of the kubelet's dials has: gRPC otherwise shares one per
//    target across channels, and a plugin's new instance at the same path would be reached
//    through the old instance's connection while that one still serves (or one in back-off),
//    and a backoff cut short (common/channel_reconnect.h) would still fail for a while;
//  - no channelz, which keeps a node and a trace of events per channel and subchannel (about
//    3 KiB per endpoint) for a service nothing here serves.
grpc::ChannelArguments PluginChannelArguments();

}  // namespace devmgr
