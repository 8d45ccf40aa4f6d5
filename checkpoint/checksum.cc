#include "checkpoint/checksum.h"

#include "absl/strings/str_cat.h"

namespace devmgr::checkpoint::internal {
namespace {

// go-spew prints a string's raw bytes (no quotes, no escapes) and a nil slice as <nil>;
// elements inside a slice or map carry no type prefix.
void AppendStrings(std::string& out, const GoStrings& list) {
  if (!list.has_value()) {
    out += "<nil>";
    return;
  }
  out += '[';
  for (size_t i = 0; i < list->size(); ++i) {
    if (i > 0) out += ' ';
    out += (*list)[i];
  }
  out += ']';
}

// A []byte is a slice of uint8: decimal numbers separated by spaces.
void AppendBytes(std::string& out, const std::optional<std::string>& bytes) {
  if (!bytes.has_value()) {
    out += "<nil>";
    return;
  }
  out += '[';
  for (size_t i = 0; i < bytes->size(); ++i) {
    if (i > 0) out += ' ';
    absl::StrAppend(&out, static_cast<unsigned>(static_cast<unsigned char>((*bytes)[i])));
  }
  out += ']';
}

void AppendEntry(std::string& out, const GoPodDevicesEntry& entry, GoLayout layout) {
  absl::StrAppend(&out, "{PodUID:(string)", entry.pod_uid, " ContainerName:(string)",
                  entry.container_name, " ResourceName:(string)", entry.resource_name);
  if (layout == GoLayout::kV1) {
    out += " DeviceIDs:([]string)";
    AppendStrings(out, entry.device_ids_v1);
  } else {
    out += " DeviceIDs:(checkpoint.DevicesPerNUMA)";
    if (!entry.device_ids.has_value()) {
      out += "<nil>";
    } else {
      // std::map orders int64 keys numerically, as SortKeys does.
      out += "map[";
      bool first = true;
      for (const auto& [numa, ids] : *entry.device_ids) {
        if (!first) out += ' ';
        first = false;
        absl::StrAppend(&out, numa, ":");
        AppendStrings(out, ids);
      }
      out += ']';
    }
  }
  out += " AllocResp:([]uint8)";
  AppendBytes(out, entry.alloc_resp);
  out += '}';
}

}  // namespace

std::string SpewText(const GoCheckpointData& data) {
  // The V1 reader renamed its types back to the 1.19 names before hashing, so both layouts
  // share the struct type names and differ only in DeviceIDs.
  std::string out = "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)";
  if (!data.pod_device_entries.has_value()) {
    out += "<nil>";
  } else {
    out += '[';
    bool first = true;
    for (const GoPodDevicesEntry& entry : *data.pod_device_entries) {
      if (!first) out += ' ';
      first = false;
      AppendEntry(out, entry, data.layout);
    }
    out += ']';
  }
  out += " RegisteredDevices:(map[string][]string)";
  if (!data.registered_devices.has_value()) {
    out += "<nil>";
  } else {
    // std::map<std::string> orders keys bytewise, as Go compares strings.
    out += "map[";
    bool first = true;
    for (const auto& [resource, ids] : *data.registered_devices) {
      if (!first) out += ' ';
      first = false;
      absl::StrAppend(&out, resource, ":");
      AppendStrings(out, ids);
    }
    out += ']';
  }
  out += '}';
  return out;
}

uint32_t Fnv1a32(absl::string_view bytes) {
  constexpr uint32_t kOffsetBasis = 2166136261U;
  constexpr uint32_t kPrime = 16777619U;
  uint32_t hash = kOffsetBasis;
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kPrime;
  }
  return hash;
}

uint64_t Checksum(const GoCheckpointData& data) { return Fnv1a32(SpewText(data)); }

}  // namespace devmgr::checkpoint::internal
