// ListAndWatchBytes: a device type's devices as the bytes of one v1beta1.ListAndWatchResponse,
// written straight from the DeviceMap, without building the message. They are the bytes
// protobuf gives for the message the map describes (a Device per entry in ID order: ID, health,
// and a TopologyInfo with one NUMANode per NUMA node when there are any; empty and zero fields
// left out, as proto3 does), so a reader cannot tell the two apart.
//
// With 100,000 devices, building the message (an object and two strings per device) and
// serializing it cost several times writing the bytes; the streams send the bytes as they are,
// to every stream, without serializing per stream. Used by DevicePluginService; not part of
// the SDK's public surface.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include "deviceplugin/device_tree.h"

namespace devmgr::deviceplugin {

// The returned buffer is one slice; copies of it share that slice.
grpc::ByteBuffer ListAndWatchBytes(const DeviceMap& devices);

}  // namespace devmgr::deviceplugin
