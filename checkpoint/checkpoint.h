// The device manager checkpoint, `kubelet_internal_checkpoint`: its data model and a codec that
// reads and writes the same bytes as a real kubelet.
//
// Encode writes the current (Kubernetes 1.20+) format exactly as Go's encoding/json writes the
// kubelet's structs, with the kubelet's checksum. Parse and Decode read that format and the
// pre-1.20 one (device IDs as a plain list, which is moved under NUMA node 0 as the kubelet's
// migration did); the next Encode upgrades it. Reading never crashes and never throws: any
// input, however broken, gives a Status.
//
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr::checkpoint {

// File name of the checkpoint inside the device plugin folder.
inline constexpr absl::string_view kCheckpointFileName = "kubelet_internal_checkpoint";

// NUMA node key for devices that report no topology.
inline constexpr int64_t kNoNumaNode = -1;

// NUMA node -> device IDs. A device on several nodes is listed under each of them.
using DevicesPerNuma = std::map<int64_t, std::vector<std::string>>;

// One committed allocation: the devices of one resource held by one container.
struct PodDevicesEntry {
  std::string pod_uid;
  std::string container_name;
  std::string resource_name;
  DevicesPerNuma device_ids;
  // The plugin's ContainerAllocateResponse, protobuf-encoded (raw bytes, not base64).
  std::string alloc_resp;

  bool operator==(const PodDevicesEntry&) const = default;
};

struct CheckpointData {
  // Written in this order; the kubelet's own order is random, so readers must not rely on it.
  std::vector<PodDevicesEntry> pod_device_entries;
  // Resource name -> healthy device IDs at write time. On restore only the names matter.
  std::map<std::string, std::vector<std::string>> registered_devices;

  bool operator==(const CheckpointData&) const = default;
};

enum class Format {
  kCurrent,  // NUMA-keyed device IDs (Kubernetes 1.20 and later)
  kV1,       // plain device ID lists (Kubernetes 1.19 and earlier)
};

// FormatName is "current" or "v1".
absl::string_view FormatName(Format format);

// A checkpoint that was read successfully, whether or not its checksum matches.
struct ParsedCheckpoint {
  CheckpointData data;
  Format format = Format::kCurrent;
  uint64_t stored_checksum = 0;    // the "Checksum" field of the file
  uint64_t computed_checksum = 0;  // what the kubelet computes over the decoded data

  bool ChecksumMatches() const { return stored_checksum == computed_checksum; }
};

// Encode returns the checkpoint file bytes for `data`: compact JSON without a trailing newline,
// keys and escaping as Go writes them, and the kubelet's checksum. Strings that are not valid
// UTF-8 are written with U+FFFD in place of bad bytes (as Go does), and the checksum is
// computed over what is written, so the file always verifies.
std::string Encode(const CheckpointData& data);

// One entry rendered once for both texts a write needs, its JSON element and its part of the
// checksum text, so that a writer that keeps them (the device manager keeps one per
// allocation) encodes a one-pod change without rendering every other entry again. The
// checksum text writes the Allocate answer's bytes as decimals, three to four times their
// size, so they are kept as bytes beside the text before them and written out at each write.
struct EncodedEntry {
  std::string json;
  std::string checksum_head;  // the checksum text up to the value of AllocResp
  std::string alloc_resp;     // the entry's alloc_resp
};

// EncodeEntry renders `entry` as Encode would.
EncodedEntry EncodeEntry(const PodDevicesEntry& entry);

// One resource's registered devices (a key and value of RegisteredDevices) rendered once for
// both texts, for a writer that keeps it while the resource's devices stay the same.
struct EncodedRegistered {
  std::string name;  // as written (valid UTF-8); the key the map is ordered by
  std::string json;
  std::string checksum_text;
};

// EncodeRegistered renders one resource's registered devices as Encode would.
EncodedRegistered EncodeRegistered(absl::string_view resource_name,
                                   const std::vector<std::string>& ids);

// EncodeRendered returns the same bytes as Encode of the data whose entries were rendered as
// `entries` (in this order) and whose registered devices as `registered` (in any order).
std::string EncodeRendered(const std::vector<std::shared_ptr<const EncodedEntry>>& entries,
                           std::vector<std::shared_ptr<const EncodedRegistered>> registered);

// Parse reads checkpoint bytes in either format without judging the checksum. Errors:
// InvalidArgument for anything that is not a checkpoint, with the JSON path or byte offset
// and the reason.
absl::StatusOr<ParsedCheckpoint> Parse(absl::string_view bytes);

// Decode is Parse plus verification. Errors: those of Parse, and DataLoss when the checksum
// does not match (the message carries both values).
absl::StatusOr<CheckpointData> Decode(absl::string_view bytes);

}  // namespace devmgr::checkpoint
