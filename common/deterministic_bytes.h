// DeterministicBytes: a protobuf message serialised with map entries in key order, so that
// the same content always gives the same bytes (the checkpoint's Allocate answers, the
// PodResources Watch hub's per-pod bytes), in a string of exactly that size: callers keep
// these bytes for as long as a pod lives, and a growing output stream would leave up to as much
// again unused behind each.
#pragma once

#include <google/protobuf/message_lite.h>

#include <string>

namespace devmgr {

std::string DeterministicBytes(const google::protobuf::MessageLite& message);

}  // namespace devmgr
