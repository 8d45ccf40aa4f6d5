#include "devicemanager/device_snapshot.h"

#include <algorithm>
#include <cstdint>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace devmgr::devicemanager {
namespace {

constexpr int kNodesSearchedInPlace = 16;

// Protobuf's default recursion limit: each message or group inside the top-level one takes one.
constexpr int kRecursionLimit = 100;

// Wire types (the low three bits of a tag).
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kDelimited = 2;
constexpr uint32_t kStartGroup = 3;
constexpr uint32_t kEndGroup = 4;
constexpr uint32_t kFixed32 = 5;

// The tags of the fields read, all length-delimited but NUMANode.ID.
constexpr uint32_t kDevicesTag = (1 << 3) | kDelimited;   // ListAndWatchResponse.devices
constexpr uint32_t kIdTag = (1 << 3) | kDelimited;        // Device.ID
constexpr uint32_t kHealthTag = (2 << 3) | kDelimited;    // Device.health
constexpr uint32_t kTopologyTag = (3 << 3) | kDelimited;  // Device.topology
constexpr uint32_t kNodesTag = (1 << 3) | kDelimited;     // TopologyInfo.nodes
constexpr uint32_t kNodeIdTag = (1 << 3) | kVarint;       // NUMANode.ID

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("cannot parse v1beta1.ListAndWatchResponse: ", what));
}

// One message's bytes, read front to back. The limits are protobuf's: a tag takes at most 5
// bytes and wraps at 32 bits, a varint at most 10 and wraps at 64, a length at most 5.
class WireReader {
 public:
  explicit WireReader(absl::string_view bytes) : rest_(bytes) {}

  bool done() const { return rest_.empty(); }

  absl::Status ReadTag(uint32_t& tag) {
    uint64_t value = 0;
    if (!ReadVarint(5, value)) return Malformed("truncated or overlong tag");
    tag = static_cast<uint32_t>(value);
    if (tag >> 3 == 0) return Malformed("field number 0");
    return absl::OkStatus();
  }

  absl::Status ReadVarint64(uint64_t& value) {
    return ReadVarint(10, value) ? absl::OkStatus() : Malformed("truncated or overlong varint");
  }

  absl::Status ReadDelimited(absl::string_view& value) {
    uint64_t size = 0;
    if (!ReadVarint(5, size)) return Malformed("truncated or overlong length");
    // Also what protobuf refuses as 2 GiB or more: no message here is that long.
    if (size > rest_.size()) return Malformed("length beyond the message");
    value = rest_.substr(0, size);
    rest_.remove_prefix(size);
    return absl::OkStatus();
  }

  // SkipField skips the value of an unknown field (or of a known one with an unexpected wire
  // type), `depth` levels being left before the recursion limit.
  absl::Status SkipField(uint32_t tag, int depth) {
    switch (tag & 7) {
      case kVarint: {
        uint64_t ignored = 0;
        return ReadVarint64(ignored);
      }
      case kFixed64:
        return SkipBytes(8);
      case kDelimited: {
        absl::string_view ignored;
        return ReadDelimited(ignored);
      }
      case kStartGroup:
        return SkipGroup(tag, depth);
      case kFixed32:
        return SkipBytes(4);
      default:  // an end-group here has no start; 6 and 7 are no wire types
        return Malformed(absl::StrCat("wire type ", tag & 7, " where a field starts"));
    }
  }

 private:
  bool ReadVarint(size_t max_bytes, uint64_t& value) {
    value = 0;
    for (size_t i = 0; i < max_bytes && i < rest_.size(); ++i) {
      const auto byte = static_cast<uint8_t>(rest_[i]);
      value |= uint64_t{byte & 0x7fu} << (7 * i);  // bits past 64 are dropped, as protobuf does
      if (byte < 0x80) {
        rest_.remove_prefix(i + 1);
        return true;
      }
    }
    return false;
  }

  absl::Status SkipBytes(size_t count) {
    if (rest_.size() < count) return Malformed("truncated fixed-width field");
    rest_.remove_prefix(count);
    return absl::OkStatus();
  }

  // A group ends at the end-group tag of its own field number; anything else ending it (the
  // end of the bytes, another field's end-group, a tag of 0) is malformed.
  absl::Status SkipGroup(uint32_t start_tag, int depth) {
    if (--depth < 0) return Malformed("nested too deeply");
    for (;;) {
      if (done()) return Malformed("group without its end");
      uint32_t tag = 0;
      if (absl::Status status = ReadTag(tag); !status.ok()) return status;
      if ((tag & 7) == kEndGroup) {
        if (tag != start_tag + 1) return Malformed("group ended by another field");
        return absl::OkStatus();
      }
      if (absl::Status status = SkipField(tag, depth); !status.ok()) return status;
    }
  }

  absl::string_view rest_;
};

// ReadEach reads the fields of one message, calling `known(tag, reader, read)` for each: it
// reads the field (its outcome in `read`) and returns true, or returns false for a field it
// does not read, which is skipped. `depth` is what the recursion limit leaves inside this
// message; the known messages nest three deep, so only groups (unknown fields) can reach it.
template <typename Known>
absl::Status ReadEach(absl::string_view bytes, int depth, Known known) {
  WireReader reader(bytes);
  while (!reader.done()) {
    uint32_t tag = 0;
    if (absl::Status status = reader.ReadTag(tag); !status.ok()) return status;
    absl::Status read;
    if (!known(tag, reader, read)) read = reader.SkipField(tag, depth);
    if (!read.ok()) return read;
  }
  return absl::OkStatus();
}

// A string field: its bytes, which must be UTF-8 (proto3 strings).
absl::Status ReadString(WireReader& reader, absl::string_view& value) {
  if (absl::Status status = reader.ReadDelimited(value); !status.ok()) return status;
  if (!ValidUtf8(value)) return Malformed("a string field is not valid UTF-8");
  return absl::OkStatus();
}

absl::Status ReadNode(absl::string_view bytes, int depth, int64_t& id) {
  id = 0;
  return ReadEach(bytes, depth, [&id](uint32_t tag, WireReader& reader, absl::Status& read) {
    if (tag != kNodeIdTag) return false;
    uint64_t value = 0;
    read = reader.ReadVarint64(value);
    id = static_cast<int64_t>(value);
    return true;
  });
}

// ReadTopology appends the IDs of a TopologyInfo's nodes to `nodes`, in order.
absl::Status ReadTopology(absl::string_view bytes, int depth, std::vector<int64_t>& nodes) {
  return ReadEach(bytes, depth, [&](uint32_t tag, WireReader& reader, absl::Status& read) {
    if (tag != kNodesTag) return false;
    absl::string_view node;
    read = reader.ReadDelimited(node);
    if (!read.ok()) return true;
    int64_t id = 0;
    read = ReadNode(node, depth - 1, id);
    nodes.push_back(id);
    return true;
  });
}

// Distinct keeps each NUMA node once, in the order of first mention. A real device lists a
// node or two, searched in place; a hostile plugin may list millions, which go through a set.
std::vector<int64_t> Distinct(const std::vector<int64_t>& nodes) {
  const bool in_place = nodes.size() <= kNodesSearchedInPlace;
  std::vector<int64_t> distinct;
  std::set<int64_t> seen;
  for (int64_t node : nodes) {
    const bool first = in_place
                           ? std::find(distinct.begin(), distinct.end(), node) == distinct.end()
                           : seen.insert(node).second;
    if (first) distinct.push_back(node);
  }
  return distinct;
}

absl::Status ReadDevice(absl::string_view bytes, int depth, Device& device) {
  absl::string_view id;
  absl::string_view health;
  std::vector<int64_t> nodes;
  absl::Status status =
      ReadEach(bytes, depth, [&](uint32_t tag, WireReader& reader, absl::Status& read) {
        switch (tag) {
          case kIdTag:
            read = ReadString(reader, id);
            return true;
          case kHealthTag:
            read = ReadString(reader, health);
            return true;
          case kTopologyTag: {
            absl::string_view topology;
            read = reader.ReadDelimited(topology);
            if (!read.ok()) return true;
            read = ReadTopology(topology, depth - 1, nodes);
            return true;
          }
          default:
            return false;
        }
      });
  if (!status.ok()) return status;
  device.id = std::string(id);
  device.health = health == "Healthy" ? Health::kHealthy : Health::kUnhealthy;
  device.numa_nodes = Distinct(nodes);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Device>> DevicesFromWire(absl::string_view bytes, size_t max_devices) {
  const int depth = kRecursionLimit;
  // Counted first, so that the devices take one allocation of their exact size: growing the
  // vector would allocate, fault in and copy about twice as much memory, which with 100,000
  // devices cost more than reading them.
  size_t count = 0;
  absl::Status status =
      ReadEach(bytes, depth, [&count](uint32_t tag, WireReader& reader, absl::Status& read) {
        if (tag != kDevicesTag) return false;
        absl::string_view device;
        read = reader.ReadDelimited(device);
        ++count;
        return true;
      });
  if (!status.ok()) return status;
  if (count > max_devices) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a snapshot of ", count, " devices, over the limit of ", max_devices));
  }
  std::vector<Device> devices;
  devices.reserve(count);
  status = ReadEach(bytes, depth, [&](uint32_t tag, WireReader& reader, absl::Status& read) {
    if (tag != kDevicesTag) return false;
    absl::string_view device;
    read = reader.ReadDelimited(device);
    if (!read.ok()) return true;
    read = ReadDevice(device, depth - 1, devices.emplace_back());
    return true;
  });
  if (!status.ok()) return status;
  return devices;
}

}  // namespace devmgr::devicemanager
