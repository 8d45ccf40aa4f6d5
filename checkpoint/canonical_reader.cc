#include "checkpoint/canonical_reader.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <string>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"

namespace devmgr::checkpoint::internal {
namespace {

// An entry as Go writes it with every string empty and no devices:
// {"PodUID":"","ContainerName":"","ResourceName":"","DeviceIDs":null,"AllocResp":null}
constexpr size_t kShortestGoEntry = 84;
// The most entries reserved ahead (64 Ki of them, 14 MiB).
constexpr size_t kMostReserved = 1 << 16;

// A recursive-descent reader over the file's bytes. Every method returns false at the first
// byte outside the canonical form, and the whole read is then abandoned.
class Reader {
 public:
  explicit Reader(absl::string_view bytes) : at_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  bool Document(GoDecoded& out) {
    unsigned seen = 0;
    const bool read = Object([&](absl::string_view key) {
      if (key == "Data") return Once(seen, 1) && Data(out.data);
      if (key == "Checksum") return Once(seen, 2) && Unsigned(out.checksum);
      return false;
    });
    SkipSpace();
    return read && at_ == end_;
  }

 private:
  // Marks the member `bit` of an object as read; false if it was already.
  static bool Once(unsigned& seen, unsigned bit) {
    if ((seen & bit) != 0) return false;
    seen |= bit;
    return true;
  }

  void SkipSpace() {
    while (at_ != end_ && (*at_ == ' ' || *at_ == '\n' || *at_ == '\r' || *at_ == '\t')) ++at_;
  }

  // Takes the one-character token `c` if it comes next.
  bool Take(char c) {
    SkipSpace();
    if (at_ == end_ || *at_ != c) return false;
    ++at_;
    return true;
  }

  bool TakeNull() {
    SkipSpace();
    if (end_ - at_ < 4 || absl::string_view(at_, 4) != "null") return false;
    at_ += 4;
    return true;
  }

  // A string of printable ASCII without escapes, as a view into the bytes.
  bool String(absl::string_view& out) {
    if (!Take('"')) return false;
    const char* start = at_;
    for (; at_ != end_ && *at_ != '"'; ++at_) {
      const auto byte = static_cast<unsigned char>(*at_);
      if (byte < 0x20 || byte > 0x7e || byte == '\\') return false;
    }
    if (at_ == end_) return false;
    out = absl::string_view(start, static_cast<size_t>(at_ - start));
    ++at_;
    return true;
  }

  // An object whose members `member(key)` reads, each value in turn.
  template <typename Member>
  bool Object(Member&& member) {
    if (!Take('{')) return false;
    if (Take('}')) return true;
    do {
      absl::string_view key;
      if (!String(key) || !Take(':') || !member(key)) return false;
    } while (Take(','));
    return Take('}');
  }

  template <typename Element>
  bool Array(Element&& element) {
    if (!Take('[')) return false;
    if (Take(']')) return true;
    do {
      if (!element()) return false;
    } while (Take(','));
    return Take(']');
  }

  // An integer as Go formats a uint64: decimal digits, no leading zero, in range.
  bool Unsigned(uint64_t& out) {
    SkipSpace();
    const char* start = at_;
    while (at_ != end_ && *at_ >= '0' && *at_ <= '9') ++at_;
    if (at_ == start || (*start == '0' && at_ - start > 1)) return false;
    const auto [end, ec] = std::from_chars(start, at_, out);
    return ec == std::errc() && end == at_;
  }

  bool Text(std::string& out) {
    absl::string_view text;
    if (!String(text)) return false;
    out.assign(text.data(), text.size());
    return true;
  }

  // A value Go writes as null when it is nil (a slice, a map, a []byte): null resets `out`;
  // anything else is read by `read` into a new, empty value.
  template <typename T, typename Read>
  bool NullOr(std::optional<T>& out, Read&& read) {
    if (TakeNull()) {
      out.reset();
      return true;
    }
    return read(out.emplace());
  }

  bool Strings(GoStrings& out) {
    return NullOr(out, [&](std::vector<std::string>& ids) {
      return Array([&] {
        absl::string_view item;
        if (!String(item)) return false;
        ids.emplace_back(item);
        return true;
      });
    });
  }

  bool Bytes(std::optional<std::string>& out) {
    return NullOr(out, [&](std::string& raw) {
      absl::string_view text;
      return String(text) && DecodeGoBytes(text, raw);
    });
  }

  // NUMA node -> device IDs, each key the node as Go formats an int64, each node once.
  bool DevicesPerNuma(std::optional<std::map<int64_t, GoStrings>>& out) {
    return NullOr(out, [&](std::map<int64_t, GoStrings>& per_numa) {
      return Object([&](absl::string_view key) {
        int64_t numa = 0;
        const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), numa);
        if (ec != std::errc() || end != key.data() + key.size() || absl::StrCat(numa) != key) {
          return false;
        }
        GoStrings ids;
        return Strings(ids) && per_numa.emplace(numa, std::move(ids)).second;
      });
    });
  }

  bool Entry(GoPodDevicesEntry& entry) {
    unsigned seen = 0;
    return Object([&](absl::string_view key) {
      if (key == "PodUID") return Once(seen, 1) && Text(entry.pod_uid);
      if (key == "ContainerName") return Once(seen, 2) && Text(entry.container_name);
      if (key == "ResourceName") return Once(seen, 4) && Text(entry.resource_name);
      if (key == "DeviceIDs") return Once(seen, 8) && DevicesPerNuma(entry.device_ids);
      if (key == "AllocResp") return Once(seen, 16) && Bytes(entry.alloc_resp);
      return false;
    });
  }

  bool Entries(std::optional<std::vector<GoPodDevicesEntry>>& out) {
    return NullOr(out, [&](std::vector<GoPodDevicesEntry>& entries) {
      // Room for as many entries as the rest of the file could hold written as Go writes
      // them, every member present (84 bytes at least), so that the vector is not grown again
      // and again; but no more than a large node's worth, whatever a file's size claims.
      entries.reserve(
          std::min(static_cast<size_t>(end_ - at_) / kShortestGoEntry + 1, kMostReserved));
      // Past the most a checkpoint holds, the general decoder says why it is refused.
      return Array([&] { return entries.size() < kMaxEntries && Entry(entries.emplace_back()); });
    });
  }

  bool Registered(std::optional<std::map<std::string, GoStrings>>& out) {
    return NullOr(out, [&](std::map<std::string, GoStrings>& registered) {
      return Object([&](absl::string_view resource) {
        GoStrings ids;
        return Strings(ids) && registered.emplace(std::string(resource), std::move(ids)).second;
      });
    });
  }

  bool Data(GoCheckpointData& data) {
    unsigned seen = 0;
    return Object([&](absl::string_view key) {
      if (key == "PodDeviceEntries") return Once(seen, 1) && Entries(data.pod_device_entries);
      if (key == "RegisteredDevices") return Once(seen, 2) && Registered(data.registered_devices);
      return false;
    });
  }

  const char* at_;
  const char* const end_;
};

}  // namespace

std::optional<GoDecoded> ReadCanonical(absl::string_view bytes) {
  // As the general decoder starts: the struct the kubelet pre-fills before reading.
  GoDecoded decoded;
  decoded.data.layout = GoLayout::kCurrent;
  decoded.data.pod_device_entries.emplace();
  decoded.data.registered_devices.emplace();
  if (!Reader(bytes).Document(decoded)) return std::nullopt;
  return decoded;
}

}  // namespace devmgr::checkpoint::internal
