// The checkpoint as the kubelet's Go code holds it in memory, nil values included.
//
// The kubelet's checksum is taken over a text rendering of its Go structs, and that text tells
// a nil slice or map ("<nil>") from an empty one ("[]", "map[]"). The public model in
// checkpoint.h does not carry that distinction, so the codec goes through this internal shape
// in both directions: JSON bytes <-> GoCheckpointData <-> CheckpointData. Internal to
// checkpoint/; not installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/string_view.h"

namespace devmgr::checkpoint::internal {

// The most entries a checkpoint may hold: one per container and resource, so a node of a
// thousand pods with a hundred containers each asking for ten resources stays under it. A larger
// list comes from a damaged or hostile file, whose entries (a few bytes each as text, an
// entry's size in memory) would take the process's memory before its checksum is known.
inline constexpr size_t kMaxEntries = size_t{1} << 20;

// A Go []string; std::nullopt is nil.
using GoStrings = std::optional<std::vector<std::string>>;

// Which Go struct definitions the data was decoded with (and so which type names the
// checksum text carries).
enum class GoLayout {
  kCurrent,  // Kubernetes 1.20 and later: DeviceIDs is map[int64][]string.
  kV1,       // Kubernetes 1.19 and earlier: DeviceIDs is []string.
};

struct GoPodDevicesEntry {
  std::string pod_uid;
  std::string container_name;
  std::string resource_name;
  // kCurrent layout: NUMA node -> device IDs; std::nullopt is a nil map.
  std::optional<std::map<int64_t, GoStrings>> device_ids;
  // kV1 layout: the plain device ID list.
  GoStrings device_ids_v1;
  // Raw bytes of a protobuf ContainerAllocateResponse; std::nullopt is a nil []byte.
  std::optional<std::string> alloc_resp;
};

struct GoCheckpointData {
  GoLayout layout = GoLayout::kCurrent;
  std::optional<std::vector<GoPodDevicesEntry>> pod_device_entries;
  std::optional<std::map<std::string, GoStrings>> registered_devices;
};

// A whole checkpoint file as decoded: its data and the checksum it stores.
struct GoDecoded {
  GoCheckpointData data;
  uint64_t checksum = 0;
};

// Go decodes a []byte from standard, padded base64 (line breaks already taken out of `text`):
// nothing but the alphabet, and '=' only as the last one or two characters (absl's decoder
// would also skip spaces and tabs, which Go refuses).
inline bool DecodeGoBytes(absl::string_view text, std::string& raw) {
  if (text.size() % 4 != 0) return false;
  size_t padding = 0;
  while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') {
    ++padding;
  }
  for (const char c : text.substr(0, text.size() - padding)) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '/') return false;
  }
  return absl::Base64Unescape(text, &raw);
}

}  // namespace devmgr::checkpoint::internal
