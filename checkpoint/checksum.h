// The kubelet's checkpoint checksum: FNV-1a (32 bits) over the text that go-spew prints for the
// checkpoint data with %#v, SortKeys and DisableMethods. Internal to checkpoint/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// The same text and checksum in pieces, for a writer that keeps each piece.
// SpewEntryHead is one entry's part of SpewText (current layout) up to the value of its
// AllocResp; the text writes those bytes as decimals, three to four times their size, so a
// writer keeps the bytes and the head. SpewRegistered is one resource's part of the registered
// devices map. ChecksumOfPieces is Checksum of data whose entries are `entries` (in order;
// none at all is the nil list, as Encode writes it; each AllocResp non-nil) and whose
// registered devices (a map, never nil) render as `registered_devices` (in key order).
struct EntryPieces {
  absl::string_view head;
  absl::string_view alloc_resp;
};
std::string SpewEntryHead(const GoPodDevicesEntry& entry);
std::string SpewRegistered(const std::string& resource_name, const GoStrings& ids);
uint64_t ChecksumOfPieces(const std::vector<EntryPieces>& entries,
                          const std::vector<absl::string_view>& registered_devices);

}  // namespace devmgr::checkpoint::internal
