#include "dra/checkpoint.h"

#include <exception>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/checksummed.h"
#include "common/crc32.h"
#include "common/go_json.h"
#include "common/json_depth.h"
#include "nlohmann/json.hpp"

namespace devmgr::dra {
namespace {

using Json = nlohmann::json;

constexpr char kKind[] = "DRACheckpoint";
constexpr char kApiVersion[] = "checkpoint.dra.kubelet.k8s.io/v1";

// A damaged or hostile file's limits, checked before it costs its size many times over in
// memory (with kMaxStateFileJsonValues): an entry is a claim the node prepared, so a million of
// them is far beyond any node. A real checkpoint nests six levels deep.
constexpr size_t kMaxEntries = size_t{1} << 20;
constexpr int kMaxJsonDepth = 32;

// The checksum of a whole text, as Go's crc32.ChecksumIEEE.
uint32_t Crc32Ieee(absl::string_view bytes) { return Crc32Feed(kCrc32Start, bytes); }

// DataHead: the Data text up to its list of entries.
std::string DataHead() {
  return absl::StrCat("{\"kind\":\"", kKind, "\",\"apiVersion\":\"", kApiVersion,
                      "\",\"Entries\":");
}

// EscapedInString: `text` escaped as it appears inside a Go JSON string (without the quotes).
// Escaping works byte by byte on valid UTF-8, so the escaped pieces of a text are the pieces of
// the escaped text.
std::string EscapedInString(absl::string_view text) {
  std::string quoted;
  AppendGoJsonString(quoted, text);
  return quoted.substr(1, quoted.size() - 2);
}

// --- Writing, as Go's encoding/json writes the kubelet's structs. ---

void AppendStrings(std::string& out, const GoStrings& list) {
  if (!list.has_value()) {
    out += "null";
    return;
  }
  out += '[';
  for (size_t i = 0; i < list->size(); ++i) {
    if (i > 0) out += ',';
    AppendGoJsonString(out, (*list)[i]);
  }
  out += ']';
}

void AppendDevice(std::string& out, const CheckpointDevice& device, Layout layout) {
  out += "{\"PoolName\":";
  AppendGoJsonString(out, device.pool_name);
  out += ",\"DeviceName\":";
  AppendGoJsonString(out, device.device_name);
  if (layout == Layout::kShareId) {
    out += ",\"ShareID\":";
    if (device.share_id.has_value()) {
      AppendGoJsonString(out, *device.share_id);
    } else {
      out += "null";
    }
  }
  out += ",\"RequestNames\":";
  AppendStrings(out, device.request_names);
  out += ",\"CDIDeviceIDs\":";
  AppendStrings(out, device.cdi_device_ids);
  out += '}';
}

void AppendEntry(std::string& out, const ClaimInfoState& entry, Layout layout) {
  out += "{\"ClaimUID\":";
  AppendGoJsonString(out, entry.claim_uid);
  out += ",\"ClaimName\":";
  AppendGoJsonString(out, entry.claim_name);
  out += ",\"Namespace\":";
  AppendGoJsonString(out, entry.namespace_name);
  out += ",\"PodUIDs\":";
  if (entry.pod_uids.has_value()) {
    out += '{';
    bool first = true;
    for (const std::string& uid : *entry.pod_uids) {
      if (!first) out += ',';
      first = false;
      AppendGoJsonString(out, uid);
      out += ":{}";
    }
    out += '}';
  } else {
    out += "null";
  }
  out += ",\"DriverState\":";
  if (entry.driver_state.has_value()) {
    out += '{';
    bool first = true;
    for (const auto& [driver, state] : *entry.driver_state) {
      if (!first) out += ',';
      first = false;
      AppendGoJsonString(out, driver);
      out += ":{\"Devices\":";
      if (state.devices.has_value()) {
        out += '[';
        for (size_t i = 0; i < state.devices->size(); ++i) {
          if (i > 0) out += ',';
          AppendDevice(out, (*state.devices)[i], layout);
        }
        out += ']';
      } else {
        out += "null";
      }
      if (state.skip_node_operations.has_value()) {
        out += ",\"SkipNodeOperations\":";
        AppendStrings(out, state.skip_node_operations);
      }
      out += '}';
    }
    out += '}';
  } else {
    out += "null";
  }
  out += '}';
}

// --- Reading. ---

// Field is one member of a JSON object, or null when it is absent.
const Json* Field(const Json& object, const char* name) {
  auto it = object.find(name);
  return it == object.end() ? nullptr : &*it;
}

absl::Status Invalid(const std::string& path, absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", reason));
}

// ReadString: a string member; absent or null reads as "" (Go leaves the zero value).
absl::Status ReadString(const Json& object, const char* name, const std::string& path,
                        std::string& out) {
  const Json* value = Field(object, name);
  if (value == nullptr || value->is_null()) return absl::OkStatus();
  if (!value->is_string()) return Invalid(absl::StrCat(path, ".", name), "not a string");
  out = value->get<std::string>();
  return absl::OkStatus();
}

absl::Status ReadStrings(const Json& object, const char* name, const std::string& path,
                         GoStrings& out) {
  const Json* value = Field(object, name);
  if (value == nullptr || value->is_null()) return absl::OkStatus();
  const std::string here = absl::StrCat(path, ".", name);
  if (!value->is_array()) return Invalid(here, "not a list");
  out.emplace();
  for (size_t i = 0; i < value->size(); ++i) {
    if (!(*value)[i].is_string()) return Invalid(absl::StrCat(here, "[", i, "]"), "not a string");
    out->push_back((*value)[i].get<std::string>());
  }
  return absl::OkStatus();
}

// ReadDevice reads one device and notes whether it carries ShareID in `has_share_id`.
absl::Status ReadDevice(const Json& value, const std::string& path, CheckpointDevice& out,
                        bool& has_share_id) {
  if (!value.is_object()) return Invalid(path, "not an object");
  for (const auto& [name, target] :
       {std::pair<const char*, std::string*>{"PoolName", &out.pool_name},
        {"DeviceName", &out.device_name}}) {
    if (absl::Status read = ReadString(value, name, path, *target); !read.ok()) return read;
  }
  has_share_id = false;
  if (const Json* share = Field(value, "ShareID"); share != nullptr) {
    has_share_id = true;
    if (share->is_string()) {
      out.share_id = share->get<std::string>();
    } else if (!share->is_null()) {
      return Invalid(absl::StrCat(path, ".ShareID"), "not a string");
    }
  }
  if (absl::Status read = ReadStrings(value, "RequestNames", path, out.request_names); !read.ok()) {
    return read;
  }
  return ReadStrings(value, "CDIDeviceIDs", path, out.cdi_device_ids);
}

absl::Status ReadEntry(const Json& value, const std::string& path, ClaimInfoState& out,
                       std::optional<Layout>& layout) {
  if (!value.is_object()) return Invalid(path, "not an object");
  for (const auto& [name, target] :
       {std::pair<const char*, std::string*>{"ClaimUID", &out.claim_uid},
        {"ClaimName", &out.claim_name},
        {"Namespace", &out.namespace_name}}) {
    if (absl::Status read = ReadString(value, name, path, *target); !read.ok()) return read;
  }
  if (const Json* pods = Field(value, "PodUIDs"); pods != nullptr && !pods->is_null()) {
    if (!pods->is_object()) return Invalid(absl::StrCat(path, ".PodUIDs"), "not an object");
    out.pod_uids.emplace();
    for (const auto& [uid, empty] : pods->items()) out.pod_uids->insert(uid);
  }
  const Json* drivers = Field(value, "DriverState");
  if (drivers == nullptr || drivers->is_null()) return absl::OkStatus();
  if (!drivers->is_object()) return Invalid(absl::StrCat(path, ".DriverState"), "not an object");
  out.driver_state.emplace();
  for (const auto& [driver, state] : drivers->items()) {
    const std::string here = absl::StrCat(path, ".DriverState[\"", driver, "\"]");
    if (!state.is_object()) return Invalid(here, "not an object");
    DriverState& driver_state = (*out.driver_state)[driver];
    if (absl::Status read =
            ReadStrings(state, "SkipNodeOperations", here, driver_state.skip_node_operations);
        !read.ok()) {
      return read;
    }
    const Json* devices = Field(state, "Devices");
    if (devices == nullptr || devices->is_null()) continue;
    if (!devices->is_array()) return Invalid(absl::StrCat(here, ".Devices"), "not a list");
    driver_state.devices.emplace();
    for (size_t i = 0; i < devices->size(); ++i) {
      CheckpointDevice device;
      bool has_share_id = false;
      if (absl::Status read = ReadDevice((*devices)[i], absl::StrCat(here, ".Devices[", i, "]"),
                                         device, has_share_id);
          !read.ok()) {
        return read;
      }
      if (!layout.has_value()) layout = has_share_id ? Layout::kShareId : Layout::kNoShareId;
      driver_state.devices->push_back(std::move(device));
    }
  }
  return absl::OkStatus();
}

// ParseJson parses `text`, naming what is wrong the way the kubelet's reader would for a file
// cut short.
absl::StatusOr<Json> ParseJson(absl::string_view text, absl::string_view what) {
  if (absl::Status shape = CheckJsonShape(text, kMaxJsonDepth, kMaxStateFileJsonValues);
      !shape.ok()) {
    return Invalid(std::string(what), shape.message());
  }
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& error) {
    if (error.byte > text.size()) return absl::InvalidArgumentError("unexpected end of JSON input");
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": invalid JSON at byte ", error.byte, " of ", text.size()));
  } catch (const std::exception& error) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", error.what()));
  }
}

}  // namespace

RenderedEntry RenderEntry(const ClaimInfoState& entry, Layout layout) {
  RenderedEntry rendered;
  AppendEntry(rendered.text, entry, layout);
  rendered.escaped = EscapedInString(rendered.text);
  return rendered;
}

std::string EncodeRendered(absl::Span<const RenderedEntry* const> entries) {
  const std::string head = absl::StrCat(DataHead(), "[");
  const std::string escaped_head = EscapedInString(head);
  size_t size = escaped_head.size() + 40;
  for (const RenderedEntry* entry : entries) size += entry->escaped.size() + 1;
  std::string out;
  out.reserve(size);
  out += "{\"Data\":\"";
  out += escaped_head;
  uint32_t crc = Crc32Feed(kCrc32Start, head);
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) {
      out += ',';
      crc = Crc32Feed(crc, ",");
    }
    out += entries[i]->escaped;
    crc = Crc32Feed(crc, entries[i]->text);
  }
  out += "]}";
  crc = Crc32Feed(crc, "]}");
  absl::StrAppend(&out, "\",\"Checksum\":", crc, "}");
  return out;
}

std::string Encode(const CheckpointData& data, Layout layout) {
  if (data.entries.has_value()) {
    std::vector<RenderedEntry> rendered;
    rendered.reserve(data.entries->size());
    for (const ClaimInfoState& entry : *data.entries) {
      rendered.push_back(RenderEntry(entry, layout));
    }
    std::vector<const RenderedEntry*> pieces;
    pieces.reserve(rendered.size());
    for (const RenderedEntry& entry : rendered) pieces.push_back(&entry);
    return EncodeRendered(pieces);
  }
  // A nil list: what a kubelet writes when it creates the file.
  const std::string text = absl::StrCat(DataHead(), "null}");
  std::string out = "{\"Data\":";
  AppendGoJsonString(out, text);
  absl::StrAppend(&out, ",\"Checksum\":", Crc32Ieee(text), "}");
  return out;
}

absl::StatusOr<ParsedCheckpoint> Parse(absl::string_view bytes) {
  absl::StatusOr<Json> outer = ParseJson(bytes, "checkpoint");
  if (!outer.ok()) return outer.status();
  if (!outer->is_object()) return Invalid("checkpoint", "not a JSON object");
  const Json* data = Field(*outer, "Data");
  if (data == nullptr || !data->is_string()) return Invalid("Data", "missing or not a string");
  const Json* checksum = Field(*outer, "Checksum");
  if (checksum == nullptr || !checksum->is_number_unsigned() ||
      checksum->get<uint64_t>() > UINT32_MAX) {
    return Invalid("Checksum", "missing or not a 32-bit unsigned number");
  }
  ParsedCheckpoint parsed;
  const std::string text = data->get<std::string>();
  parsed.stored_checksum = static_cast<uint32_t>(checksum->get<uint64_t>());
  parsed.computed_checksum = Crc32Ieee(text);

  absl::StatusOr<Json> inner = ParseJson(text, "Data");
  if (!inner.ok()) return inner.status();
  if (!inner->is_object()) return Invalid("Data", "not a JSON object");
  // The kubelet decodes kind and apiVersion (strings) and looks at neither.
  std::string kind;
  std::string api_version;
  if (absl::Status read = ReadString(*inner, "kind", "Data", kind); !read.ok()) return read;
  if (absl::Status read = ReadString(*inner, "apiVersion", "Data", api_version); !read.ok()) {
    return read;
  }
  const char* list_name = "Entries";
  const Json* entries = Field(*inner, list_name);
  if (entries == nullptr) {
    list_name = "ClaimInfoStateList";
    entries = Field(*inner, list_name);
    parsed.claim_info_state_list = entries != nullptr;
  }
  if (entries == nullptr || entries->is_null()) return parsed;
  if (!entries->is_array()) return Invalid(absl::StrCat("Data.", list_name), "not a list");
  if (entries->size() > kMaxEntries) {
    return Invalid(absl::StrCat("Data.", list_name),
                   absl::StrCat(entries->size(), " entries, more than ", kMaxEntries));
  }
  parsed.data.entries.emplace();
  for (size_t i = 0; i < entries->size(); ++i) {
    ClaimInfoState entry;
    if (absl::Status read =
            ReadEntry((*entries)[i], absl::StrCat(list_name, "[", i, "]"), entry, parsed.layout);
        !read.ok()) {
      return read;
    }
    parsed.data.entries->push_back(std::move(entry));
  }
  return parsed;
}

absl::StatusOr<CheckpointData> Decode(absl::string_view bytes) {
  return VerifiedData(Parse(bytes));
}

}  // namespace devmgr::dra
