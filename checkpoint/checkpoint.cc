#include "checkpoint/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "checkpoint/canonical_reader.h"
#include "checkpoint/checksum.h"
#include "checkpoint/go_value.h"
#include "checkpoint/tree_decoder.h"
#include "common/checksummed.h"
#include "common/go_json.h"
#include "common/json_depth.h"
#include "nlohmann/json.hpp"

namespace devmgr::checkpoint {
namespace {

using internal::GoCheckpointData;
using internal::GoDecoded;
using internal::GoLayout;
using internal::GoPodDevicesEntry;
using internal::GoStrings;
// Document order matters: Go applies object members in the order they appear.
using Json = nlohmann::ordered_json;

// A real checkpoint nests four levels deep. Refusing anything much deeper before parsing keeps
// hostile input from costing more than a linear scan.
constexpr int kMaxJsonDepth = 32;
// The most values a checkpoint's JSON may hold, sixteen million: its entries (kMaxEntries, a few
// values each) and the registered devices of a node with millions. The parsed tree of that many
// tiny values is a few hundred megabytes; of the 256 MiB a file may be, twenty times that.
constexpr size_t kMaxJsonValues = size_t{1} << 24;

absl::string_view JsonTypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "bool";
    case Json::value_t::string:
      return "string";
    case Json::value_t::array:
      return "array";
    case Json::value_t::object:
      return "object";
    case Json::value_t::binary:
      return "binary";
    case Json::value_t::discarded:
      return "nothing";
    default:
      return "number";
  }
}

absl::Status TypeError(absl::string_view path, absl::string_view expected, const Json& got) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": expected ", expected, ", got ", JsonTypeName(got)));
}

// Go matches JSON keys to struct fields case-insensitively.
bool KeyIs(absl::string_view key, absl::string_view field) {
  return absl::EqualsIgnoreCase(key, field);
}

// Decoding JSON null into a Go string, struct or number leaves the target as it was; into a
// slice or map it makes the target nil. The functions below follow those rules.

absl::Status DecodeString(const Json& value, absl::string_view path, std::string& out) {
  if (value.is_null()) return absl::OkStatus();
  if (!value.is_string()) return TypeError(path, "a string", value);
  out = value.get<std::string>();
  return absl::OkStatus();
}

absl::Status DecodeStrings(const Json& value, absl::string_view path, GoStrings& out) {
  if (value.is_null()) {
    out.reset();
    return absl::OkStatus();
  }
  if (!value.is_array()) return TypeError(path, "an array of strings", value);
  out.emplace();
  // No room taken ahead: a list of anything but strings fails at its first element.
  for (size_t i = 0; i < value.size(); ++i) {
    std::string item;
    absl::Status status = DecodeString(value[i], absl::StrCat(path, "[", i, "]"), item);
    if (!status.ok()) return status;
    out->push_back(std::move(item));
  }
  return absl::OkStatus();
}

// Go's strconv.ParseInt(key, 10, 64): an optional sign, then decimal digits, in range.
std::optional<int64_t> ParseGoInt64(absl::string_view key) {
  const bool negative = !key.empty() && key.front() == '-';
  if (!key.empty() && (key.front() == '+' || key.front() == '-')) key.remove_prefix(1);
  if (key.empty() || key.front() < '0' || key.front() > '9') return std::nullopt;
  uint64_t magnitude = 0;
  const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), magnitude);
  if (ec != std::errc() || end != key.data() + key.size()) return std::nullopt;
  const uint64_t limit =
      static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (negative ? 1 : 0);
  if (magnitude > limit) return std::nullopt;
  if (negative) return static_cast<int64_t>(0 - magnitude);
  return static_cast<int64_t>(magnitude);
}

absl::Status DecodeDevicesPerNuma(const Json& value, absl::string_view path,
                                  std::optional<std::map<int64_t, GoStrings>>& out) {
  if (value.is_null()) {
    out.reset();
    return absl::OkStatus();
  }
  if (!value.is_object()) return TypeError(path, "an object of NUMA node -> device IDs", value);
  if (!out.has_value()) out.emplace();
  for (const auto& [key, ids] : value.items()) {
    const std::optional<int64_t> numa = ParseGoInt64(key);
    if (!numa.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": NUMA node key \"", key, "\" is not a 64-bit integer"));
    }
    GoStrings decoded;
    absl::Status status = DecodeStrings(ids, absl::StrCat(path, "[\"", key, "\"]"), decoded);
    if (!status.ok()) return status;
    (*out)[*numa] = std::move(decoded);
  }
  return absl::OkStatus();
}

// Go decodes a []byte from standard, padded base64 (line breaks ignored).
absl::Status DecodeBytes(const Json& value, absl::string_view path,
                         std::optional<std::string>& out) {
  if (value.is_null()) {
    out.reset();
    return absl::OkStatus();
  }
  if (!value.is_string()) return TypeError(path, "a base64 string", value);
  const std::string text = absl::StrReplaceAll(value.get<std::string>(), {{"\r", ""}, {"\n", ""}});
  std::string raw;
  if (!internal::DecodeGoBytes(text, raw)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not valid padded base64"));
  }
  out = std::move(raw);
  return absl::OkStatus();
}

absl::Status DecodeEntry(const Json& value, absl::string_view path, GoLayout layout,
                         GoPodDevicesEntry& entry) {
  if (value.is_null()) return absl::OkStatus();
  if (!value.is_object()) return TypeError(path, "an object", value);
  for (const auto& [key, member] : value.items()) {
    const std::string member_path = absl::StrCat(path, ".", key);
    absl::Status status;
    if (KeyIs(key, "PodUID")) {
      status = DecodeString(member, member_path, entry.pod_uid);
    } else if (KeyIs(key, "ContainerName")) {
      status = DecodeString(member, member_path, entry.container_name);
    } else if (KeyIs(key, "ResourceName")) {
      status = DecodeString(member, member_path, entry.resource_name);
    } else if (KeyIs(key, "DeviceIDs")) {
      status = layout == GoLayout::kV1
                   ? DecodeStrings(member, member_path, entry.device_ids_v1)
                   : DecodeDevicesPerNuma(member, member_path, entry.device_ids);
    } else if (KeyIs(key, "AllocResp")) {
      status = DecodeBytes(member, member_path, entry.alloc_resp);
    }
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status DecodeData(const Json& value, GoLayout layout, GoCheckpointData& data) {
  if (value.is_null()) return absl::OkStatus();
  if (!value.is_object()) return TypeError("Data", "an object", value);
  for (const auto& [key, member] : value.items()) {
    const std::string path = absl::StrCat("Data.", key);
    if (KeyIs(key, "PodDeviceEntries")) {
      if (member.is_null()) {
        data.pod_device_entries.reset();
        continue;
      }
      if (!member.is_array()) return TypeError(path, "an array", member);
      if (member.size() > internal::kMaxEntries) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": ", member.size(), " entries, more than ", internal::kMaxEntries));
      }
      // Each entry is decoded before the next is made: a list of anything but entries fails
      // at its first element, not after an entry was allocated for each.
      data.pod_device_entries.emplace();
      for (size_t i = 0; i < member.size(); ++i) {
        GoPodDevicesEntry entry;
        absl::Status status =
            DecodeEntry(member[i], absl::StrCat(path, "[", i, "]"), layout, entry);
        if (!status.ok()) return status;
        data.pod_device_entries->push_back(std::move(entry));
      }
    } else if (KeyIs(key, "RegisteredDevices")) {
      if (member.is_null()) {
        data.registered_devices.reset();
        continue;
      }
      if (!member.is_object()) return TypeError(path, "an object", member);
      // Decoding into an existing Go map adds to it.
      if (!data.registered_devices.has_value()) data.registered_devices.emplace();
      for (const auto& [resource, ids] : member.items()) {
        GoStrings decoded;
        absl::Status status =
            DecodeStrings(ids, absl::StrCat(path, "[\"", resource, "\"]"), decoded);
        if (!status.ok()) return status;
        (*data.registered_devices)[resource] = std::move(decoded);
      }
    }
  }
  return absl::OkStatus();
}

// DecodeGo mirrors json.Unmarshal into the struct the kubelet pre-fills before reading: an
// empty, non-nil entry slice and registered-devices map.
absl::StatusOr<GoDecoded> DecodeGo(const Json& root, GoLayout layout) {
  GoDecoded decoded;
  decoded.data.layout = layout;
  decoded.data.pod_device_entries.emplace();
  decoded.data.registered_devices.emplace();
  if (root.is_null()) return decoded;
  if (!root.is_object()) return TypeError("checkpoint", "an object", root);
  for (const auto& [key, member] : root.items()) {
    if (KeyIs(key, "Data")) {
      absl::Status status = DecodeData(member, layout, decoded.data);
      if (!status.ok()) return status;
    } else if (KeyIs(key, "Checksum")) {
      if (member.is_null()) continue;
      if (!member.is_number_unsigned()) {
        return absl::InvalidArgumentError(
            absl::StrCat("Checksum: expected an unsigned 64-bit integer, got ", member.dump()));
      }
      decoded.checksum = member.get<uint64_t>();
    }
  }
  return decoded;
}

std::vector<std::string> ValueOrEmpty(GoStrings list) {
  return list.has_value() ? *std::move(list) : std::vector<std::string>{};
}

CheckpointData FromGo(GoCheckpointData go) {
  CheckpointData data;
  if (go.pod_device_entries.has_value()) {
    data.pod_device_entries.reserve(go.pod_device_entries->size());
    for (GoPodDevicesEntry& entry : *go.pod_device_entries) {
      PodDevicesEntry& out = data.pod_device_entries.emplace_back();
      out.pod_uid = std::move(entry.pod_uid);
      out.container_name = std::move(entry.container_name);
      out.resource_name = std::move(entry.resource_name);
      out.alloc_resp = entry.alloc_resp.value_or("");
      if (go.layout == GoLayout::kV1) {
        // The kubelet's 1.20 migration put every pre-NUMA device under node 0.
        out.device_ids[0] = ValueOrEmpty(std::move(entry.device_ids_v1));
      } else if (entry.device_ids.has_value()) {
        for (auto& [numa, ids] : *entry.device_ids)
          out.device_ids[numa] = ValueOrEmpty(std::move(ids));
      }
    }
  }
  if (go.registered_devices.has_value()) {
    for (auto& [resource, ids] : *go.registered_devices) {
      data.registered_devices[resource] = ValueOrEmpty(std::move(ids));
    }
  }
  return data;
}

// ToGoStrings, ToGoEntry and ToGoRegistered give the Go values the kubelet itself would hold
// when writing them: non-nil maps, lists and bytes everywhere.
GoStrings ToGoStrings(const std::vector<std::string>& ids) {
  GoStrings list;
  list.emplace().reserve(ids.size());
  for (const std::string& id : ids) list->push_back(ToValidUtf8(id));
  return list;
}

GoPodDevicesEntry ToGoEntry(const PodDevicesEntry& entry) {
  GoPodDevicesEntry out;
  out.pod_uid = ToValidUtf8(entry.pod_uid);
  out.container_name = ToValidUtf8(entry.container_name);
  out.resource_name = ToValidUtf8(entry.resource_name);
  out.alloc_resp = entry.alloc_resp;
  auto& per_numa = out.device_ids.emplace();
  for (const auto& [numa, ids] : entry.device_ids) per_numa[numa] = ToGoStrings(ids);
  return out;
}

std::map<std::string, GoStrings> ToGoRegistered(
    const std::map<std::string, std::vector<std::string>>& registered_devices) {
  std::map<std::string, GoStrings> registered;
  for (const auto& [resource, ids] : registered_devices) {
    registered[ToValidUtf8(resource)] = ToGoStrings(ids);
  }
  return registered;
}

// ToGo: as above, and a nil entry slice when there are no entries.
GoCheckpointData ToGo(const CheckpointData& data) {
  GoCheckpointData go;
  if (!data.pod_device_entries.empty()) {
    go.pod_device_entries.emplace();
    go.pod_device_entries->reserve(data.pod_device_entries.size());
    for (const PodDevicesEntry& entry : data.pod_device_entries) {
      go.pod_device_entries->push_back(ToGoEntry(entry));
    }
  }
  go.registered_devices = ToGoRegistered(data.registered_devices);
  return go;
}

void AppendJsonStrings(std::string& out, const GoStrings& list) {
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

// Go writes map keys sorted as strings, so NUMA node 10 comes before node 2.
void AppendJsonDevicesPerNuma(std::string& out, const std::map<int64_t, GoStrings>& per_numa) {
  std::vector<std::pair<std::string, const GoStrings*>> keyed;
  keyed.reserve(per_numa.size());
  for (const auto& [numa, ids] : per_numa) keyed.emplace_back(absl::StrCat(numa), &ids);
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  out += '{';
  for (size_t i = 0; i < keyed.size(); ++i) {
    if (i > 0) out += ',';
    absl::StrAppend(&out, "\"", keyed[i].first, "\":");
    AppendJsonStrings(out, *keyed[i].second);
  }
  out += '}';
}

void AppendJsonEntry(std::string& out, const GoPodDevicesEntry& entry) {
  out += "{\"PodUID\":";
  AppendGoJsonString(out, entry.pod_uid);
  out += ",\"ContainerName\":";
  AppendGoJsonString(out, entry.container_name);
  out += ",\"ResourceName\":";
  AppendGoJsonString(out, entry.resource_name);
  out += ",\"DeviceIDs\":";
  if (entry.device_ids.has_value()) {
    AppendJsonDevicesPerNuma(out, *entry.device_ids);
  } else {
    out += "null";
  }
  out += ",\"AllocResp\":";
  if (entry.alloc_resp.has_value()) {
    absl::StrAppend(&out, "\"", absl::Base64Escape(*entry.alloc_resp), "\"");
  } else {
    out += "null";
  }
  out += '}';
}

// AppendJsonRegistered writes one key and value of the registered devices object.
void AppendJsonRegistered(std::string& out, const std::string& resource_name,
                          const GoStrings& ids) {
  AppendGoJsonString(out, resource_name);
  out += ':';
  AppendJsonStrings(out, ids);
}

constexpr std::string_view kJsonRegisteredDevices = ",\"RegisteredDevices\":";

void AppendJsonChecksum(std::string& out, uint64_t checksum) {
  absl::StrAppend(&out, "},\"Checksum\":", checksum, "}");
}

// AppendJsonEnd writes what follows the entries: the registered devices and the checksum.
void AppendJsonEnd(std::string& out,
                   const std::optional<std::map<std::string, GoStrings>>& registered_devices,
                   uint64_t checksum) {
  out += kJsonRegisteredDevices;
  if (!registered_devices.has_value()) {
    out += "null";
  } else {
    out += '{';
    bool first = true;
    for (const auto& [resource, ids] : *registered_devices) {
      if (!first) out += ',';
      first = false;
      AppendJsonRegistered(out, resource, ids);
    }
    out += '}';
  }
  AppendJsonChecksum(out, checksum);
}

constexpr std::string_view kJsonStart = "{\"Data\":{\"PodDeviceEntries\":";

// For rendered entries: their parts of the checksum text, in order, adding the size of their
// JSON to `json_size`.
std::vector<internal::EntryPieces> ChecksumPieces(
    const std::vector<std::shared_ptr<const EncodedEntry>>& entries, size_t& json_size) {
  std::vector<internal::EntryPieces> pieces;
  pieces.reserve(entries.size());
  for (const auto& entry : entries) {
    pieces.push_back({entry->checksum_head, entry->alloc_resp});
    json_size += entry->json.size() + 1;
  }
  return pieces;
}

// The same for rendered resources.
std::vector<absl::string_view> ChecksumTexts(
    const std::vector<std::shared_ptr<const EncodedRegistered>>& registered, size_t& json_size) {
  std::vector<absl::string_view> texts;
  texts.reserve(registered.size());
  for (const auto& resource : registered) {
    texts.push_back(resource->checksum_text);
    json_size += resource->json.size() + 1;
  }
  return texts;
}

template <typename Rendered>
void AppendJoinedJson(std::string& out,
                      const std::vector<std::shared_ptr<const Rendered>>& rendered) {
  for (size_t i = 0; i < rendered.size(); ++i) {
    if (i > 0) out += ',';
    out += rendered[i]->json;
  }
}

std::string ToJson(const GoCheckpointData& go, uint64_t checksum) {
  std::string out(kJsonStart);
  if (!go.pod_device_entries.has_value()) {
    out += "null";
  } else {
    out += '[';
    bool first = true;
    for (const GoPodDevicesEntry& entry : *go.pod_device_entries) {
      if (!first) out += ',';
      first = false;
      AppendJsonEntry(out, entry);
    }
    out += ']';
  }
  AppendJsonEnd(out, go.registered_devices, checksum);
  return out;
}

ParsedCheckpoint ToParsed(GoDecoded decoded, Format format) {
  ParsedCheckpoint parsed;
  parsed.format = format;
  parsed.stored_checksum = decoded.checksum;
  parsed.computed_checksum = internal::Checksum(decoded.data);
  parsed.data = FromGo(std::move(decoded.data));
  return parsed;
}

}  // namespace

absl::string_view FormatName(Format format) { return format == Format::kV1 ? "v1" : "current"; }

std::string Encode(const CheckpointData& data) {
  const GoCheckpointData go = ToGo(data);
  return ToJson(go, internal::Checksum(go));
}

EncodedEntry EncodeEntry(const PodDevicesEntry& entry) {
  const GoPodDevicesEntry go = ToGoEntry(entry);
  EncodedEntry encoded;
  AppendJsonEntry(encoded.json, go);
  encoded.checksum_head = internal::SpewEntryHead(go);
  encoded.alloc_resp = entry.alloc_resp;
  // Kept for as long as the allocation lives: without the room the appends left (up to as much
  // again).
  encoded.json.shrink_to_fit();
  encoded.checksum_head.shrink_to_fit();
  return encoded;
}

EncodedRegistered EncodeRegistered(absl::string_view resource_name,
                                   const std::vector<std::string>& ids) {
  EncodedRegistered encoded;
  encoded.name = ToValidUtf8(resource_name);
  const GoStrings list = ToGoStrings(ids);
  AppendJsonRegistered(encoded.json, encoded.name, list);
  encoded.checksum_text = internal::SpewRegistered(encoded.name, list);
  // Kept while the resource's devices stay the same.
  encoded.json.shrink_to_fit();
  encoded.checksum_text.shrink_to_fit();
  return encoded;
}

std::string EncodeRendered(const std::vector<std::shared_ptr<const EncodedEntry>>& entries,
                           std::vector<std::shared_ptr<const EncodedRegistered>> registered) {
  // Go writes map keys sorted.
  std::sort(registered.begin(), registered.end(),
            [](const auto& a, const auto& b) { return a->name < b->name; });
  size_t json_size = kJsonStart.size() + kJsonRegisteredDevices.size() + 64;
  const std::vector<internal::EntryPieces> pieces = ChecksumPieces(entries, json_size);
  const std::vector<absl::string_view> registered_texts = ChecksumTexts(registered, json_size);
  std::string out;
  out.reserve(json_size);
  out += kJsonStart;
  if (entries.empty()) {
    out += "null";
  } else {
    out += '[';
    AppendJoinedJson(out, entries);
    out += ']';
  }
  out += kJsonRegisteredDevices;
  out += '{';
  AppendJoinedJson(out, registered);
  out += '}';
  AppendJsonChecksum(out, internal::ChecksumOfPieces(pieces, registered_texts));
  return out;
}

namespace internal {

absl::StatusOr<ParsedCheckpoint> ParseTree(absl::string_view bytes) {
  if (absl::Status shape = CheckJsonShape(bytes, kMaxJsonDepth, kMaxJsonValues); !shape.ok()) {
    return shape;
  }
  // nlohmann's parser skips a byte-order mark; Go's refuses it, and a kubelet starts without
  // the file.
  if (absl::StartsWith(bytes, "\xEF\xBB\xBF")) {
    return absl::InvalidArgumentError(
        "not valid JSON: invalid character '\xC3\xAF' looking for beginning of value");
  }
  Json root;
  try {
    root = Json::parse(bytes);
  } catch (const Json::exception& e) {
    // A syntax error (with its byte offset) or a number too large for a double; nlohmann says
    // which in e.what().
    return absl::InvalidArgumentError(absl::StrCat("not valid JSON: ", e.what()));
  }

  // As the kubelet 1.20+ reader did: the current layout first; if that does not decode and
  // verify, the pre-1.20 layout. A file that decodes in the current layout but fails its
  // checksum there is reported in that layout unless the old one verifies.
  absl::StatusOr<GoDecoded> current = DecodeGo(root, GoLayout::kCurrent);
  std::optional<ParsedCheckpoint> current_parsed;
  if (current.ok()) {
    current_parsed = ToParsed(*std::move(current), Format::kCurrent);
    if (current_parsed->ChecksumMatches()) return *std::move(current_parsed);
  }
  absl::StatusOr<GoDecoded> v1 = DecodeGo(root, GoLayout::kV1);
  if (v1.ok()) {
    ParsedCheckpoint v1_parsed = ToParsed(*std::move(v1), Format::kV1);
    if (v1_parsed.ChecksumMatches() || !current_parsed.has_value()) return v1_parsed;
  }
  if (current_parsed.has_value()) return *std::move(current_parsed);
  return current.status();
}

}  // namespace internal

absl::StatusOr<ParsedCheckpoint> Parse(absl::string_view bytes) {
  // The file as Go and Encode write it, read without a JSON tree. Anything else, and a file
  // whose checksum does not verify (which may be in the pre-1.20 layout), takes the general
  // path.
  if (std::optional<GoDecoded> canonical = internal::ReadCanonical(bytes)) {
    ParsedCheckpoint parsed = ToParsed(*std::move(canonical), Format::kCurrent);
    if (parsed.ChecksumMatches()) return parsed;
  }
  return internal::ParseTree(bytes);
}

absl::StatusOr<CheckpointData> Decode(absl::string_view bytes) {
  return VerifiedData(Parse(bytes));
}

}  // namespace devmgr::checkpoint
