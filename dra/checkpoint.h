// The DRA manager's checkpoint, `dra_manager_state` in the kubelet's root folder: the claims
// prepared on the node, which pods use them, and what each driver returned. Its data model and a
// codec that reads and writes the same bytes as a real kubelet (pkg/kubelet/cm/dra/state).
//
// The file is `{"Data":"<text>","Checksum":<n>}`: Data is Go's encoding/json rendering of the
// kubelet's DRACheckpoint struct (Go field names in declaration order, map keys sorted, nil as
// null) and Checksum the CRC-32 (IEEE) of Data's bytes. Unlike `kubelet_internal_checkpoint`,
// the checksum covers the text as stored, so verifying never needs the text rebuilt.
//
// Layouts. Kubelets that know DRA consumable capacity write each device with a `ShareID`
// (`null` when unset) between DeviceName and RequestNames; older ones write no such field, and
// the oldest name the claim list `ClaimInfoStateList` instead of `Entries`. Parse reads all of
// them; Encode writes `Entries` with or without ShareID, as the caller says (with, by default,
// as the newest kubelet does).
//
// Nil and empty are told apart (Go writes `null` for a nil slice or map and `[]`/`{}` for an
// empty one), so a file read and written again comes out byte for byte the same. Reading never
// crashes and never throws: any input gives a Status. All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace devmgr::dra {

// File name of the checkpoint in the kubelet's root folder.
inline constexpr char kCheckpointName[] = "dra_manager_state";

// A list Go may hold as nil; std::nullopt is nil (written null).
using GoStrings = std::optional<std::vector<std::string>>;

// One device a driver prepared for a claim (upstream state.Device).
struct CheckpointDevice {
  std::string pool_name;
  std::string device_name;
  // The share of a device with consumable capacity; std::nullopt is nil.
  std::optional<std::string> share_id;
  // The claim's requests the device serves; nil or empty means every request.
  GoStrings request_names;
  GoStrings cdi_device_ids;

  bool operator==(const CheckpointDevice&) const = default;
};

// What one driver returned for one claim (upstream state.DriverState).
struct DriverState {
  std::optional<std::vector<CheckpointDevice>> devices;
  // The node operations that every device of the claim from this driver skips
  // (DRAOptionalNodeOperations, dra/claim_info.h). Written "SkipNodeOperations" after Devices
  // and only when set, so a claim that skips nothing is written as before the gate.
  GoStrings skip_node_operations = std::nullopt;

  bool operator==(const DriverState&) const = default;
};

// One prepared claim (upstream state.ClaimInfoState).
struct ClaimInfoState {
  std::string claim_uid;
  std::string claim_name;
  std::string namespace_name;
  // The pods using the claim (a Go set); std::nullopt is nil.
  std::optional<std::set<std::string>> pod_uids;
  // Driver name -> its state, for every driver with results in the claim's allocation;
  // std::nullopt is nil.
  std::optional<std::map<std::string, DriverState>> driver_state;

  bool operator==(const ClaimInfoState&) const = default;
};

struct CheckpointData {
  // std::nullopt is nil: what a kubelet writes when it creates the file.
  std::optional<std::vector<ClaimInfoState>> entries;

  bool operator==(const CheckpointData&) const = default;
};

enum class Layout {
  kShareId,    // devices carry "ShareID" (newest kubelets)
  kNoShareId,  // devices carry no "ShareID"
};

// A checkpoint that was read successfully, whether or not its checksum matches.
struct ParsedCheckpoint {
  CheckpointData data;
  // The layout of the file's devices; std::nullopt when it lists none (either fits).
  std::optional<Layout> layout;
  // Whether the claim list is named "ClaimInfoStateList" (the oldest kubelets).
  bool claim_info_state_list = false;
  uint32_t stored_checksum = 0;
  uint32_t computed_checksum = 0;

  bool ChecksumMatches() const { return stored_checksum == computed_checksum; }
};

// Encode returns the file bytes for `data`: compact JSON without a trailing newline, keys and
// escaping as Go writes them, with the checksum of the Data text. Strings that are not valid
// UTF-8 are written with U+FFFD in place of bad bytes, as Go does.
std::string Encode(const CheckpointData& data, Layout layout = Layout::kShareId);

// The file in pieces, for a writer that keeps each claim's entry rendered and changes few at a
// time: RenderEntry renders one entry, and EncodeRendered gives the file whose entries are these,
// in this order (the bytes Encode gives for the same entries). Rendering is per entry; joining,
// escaping and the checksum then cost a pass over bytes already rendered.
struct RenderedEntry {
  // The entry as it appears in the Data text, and the same escaped as it appears in the file.
  std::string text;
  std::string escaped;
};
RenderedEntry RenderEntry(const ClaimInfoState& entry, Layout layout = Layout::kShareId);
std::string EncodeRendered(absl::Span<const RenderedEntry* const> entries);

// Parse reads checkpoint bytes without judging the checksum. InvalidArgument for anything that
// is not a DRA checkpoint, naming the field and the reason; a file that ends too soon says
// "unexpected end of JSON input", as the kubelet does.
absl::StatusOr<ParsedCheckpoint> Parse(absl::string_view bytes);

// Decode is Parse plus verification: DataLoss "checkpoint is corrupted" (the kubelet's text)
// with both checksums when they differ.
absl::StatusOr<CheckpointData> Decode(absl::string_view bytes);

}  // namespace devmgr::dra
