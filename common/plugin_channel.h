// The channel, and its arguments, of every dial of a plugin's socket (a device plugin, a plugin
// found in plugins_registry, a DRA driver), and of a DRA driver's dials of the daemon: the parts
// the kubelet's gRPC dials have in common.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/support/channel_arguments.h>

#include <filesystem>
#include <memory>

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

// PluginChannel: an insecure channel to the unix socket at `socket` (UnixTarget) with `args`,
// PluginChannelArguments() or those with a caller's additions. It connects when first used.
std::shared_ptr<grpc::Channel> PluginChannel(
    const std::filesystem::path& socket,
    const grpc::ChannelArguments& args = PluginChannelArguments());

}  // namespace devmgr
