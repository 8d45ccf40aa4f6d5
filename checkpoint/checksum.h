// The kubelet's checkpoint checksum: FNV-1a (32 bits) over the text that go-spew prints for the
// checkpoint data with %#v, SortKeys and DisableMethods. Internal to checkpoint/.
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "checkpoint/go_value.h"

namespace devmgr::checkpoint::internal {

// SpewText renders `data` exactly as go-spew renders the kubelet's checkpointData value,
// including nil-versus-empty and the Go type names of the layout.
std::string SpewText(const GoCheckpointData& data);

// Fnv1a32 is the 32-bit FNV-1a hash of `bytes`.
uint32_t Fnv1a32(absl::string_view bytes);

// Checksum is Fnv1a32(SpewText(data)), widened as the kubelet stores it.
uint64_t Checksum(const GoCheckpointData& data);

}  // namespace devmgr::checkpoint::internal
