// DevicesFromWire against protobuf: for every input, hand-made edge cases of the wire format
// and random mutations of real snapshots, DevicesFromWire must refuse exactly what protobuf's
// parse of a v1beta1.ListAndWatchResponse refuses, and otherwise give the devices the manager
// made from protobuf's message (last ID and health of an entry, its topologies merged, each NUMA
// node once in order of first mention).
#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devicemanager/device_snapshot.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace devmgr::devicemanager {
namespace {

// What the manager made of protobuf's message before DevicesFromWire read bytes itself.
std::optional<std::vector<Device>> ByProtobuf(const std::string& bytes) {
  v1beta1::ListAndWatchResponse response;
  if (!response.ParseFromString(bytes)) return std::nullopt;
  std::vector<Device> devices;
  for (const auto& wire : response.devices()) {
    Device& device = devices.emplace_back();
    device.id = wire.id();
    device.health = wire.health() == "Healthy" ? Health::kHealthy : Health::kUnhealthy;
    for (const auto& node : wire.topology().nodes()) {
      if (std::find(device.numa_nodes.begin(), device.numa_nodes.end(), node.id()) ==
          device.numa_nodes.end()) {
        device.numa_nodes.push_back(node.id());
      }
    }
  }
  return devices;
}

std::optional<std::vector<Device>> ByDevicesFromWire(const std::string& bytes) {
  absl::StatusOr<std::vector<Device>> devices = DevicesFromWire(bytes);
  if (!devices.ok()) return std::nullopt;
  return *std::move(devices);
}

std::string Hex(const std::string& bytes) {
  std::string hex;
  for (unsigned char c : bytes) absl::StrAppend(&hex, absl::Hex(c, absl::kZeroPad2), " ");
  return hex;
}

// Agree: both refuse, or both give the same devices.
void ExpectAgree(const std::string& bytes) {
  const std::optional<std::vector<Device>> expected = ByProtobuf(bytes);
  const std::optional<std::vector<Device>> got = ByDevicesFromWire(bytes);
  ASSERT_EQ(got.has_value(), expected.has_value())
      << (expected.has_value() ? "protobuf parses, DevicesFromWire refuses: "
                               : "protobuf refuses, DevicesFromWire parses: ")
      << Hex(bytes.substr(0, 200));
  if (expected.has_value()) {
    EXPECT_EQ(*got, *expected) << Hex(bytes.substr(0, 200));
  }
}

// ---- Building wire bytes by hand.

std::string Varint(uint64_t value) {
  std::string out;
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
  return out;
}

std::string Tag(uint64_t field, uint32_t wire_type) { return Varint(field << 3 | wire_type); }

std::string Delimited(uint64_t field, const std::string& bytes) {
  return Tag(field, 2) + Varint(bytes.size()) + bytes;
}

std::string Node(int64_t id) { return Tag(1, 0) + Varint(static_cast<uint64_t>(id)); }

std::string WireDevice(const std::string& id, const std::string& health,
                       const std::string& more = "") {
  return Delimited(1, Delimited(1, id) + Delimited(2, health) + more);
}

std::string Topology(const std::vector<int64_t>& nodes) {
  std::string topology;
  for (int64_t node : nodes) topology += Delimited(1, Node(node));
  return Delimited(3, topology);
}

class DeviceSnapshotWireTest : public ::testing::Test {
  // Protobuf logs every string field with invalid UTF-8 it refuses; the refusal is the point.
  google::protobuf::LogSilencer silence_;
};

TEST_F(DeviceSnapshotWireTest, ValidMessagesOfEveryShape) {
  ExpectAgree("");
  ExpectAgree(WireDevice("a", "Healthy"));
  ExpectAgree(WireDevice("a", "Healthy", Topology({0, 1, 1, -1, INT64_MIN})) +
              WireDevice("b", "x"));
  ExpectAgree(Delimited(1, ""));                              // a device with nothing set
  ExpectAgree(Delimited(1, Delimited(3, "")));                // an empty topology
  ExpectAgree(Delimited(1, Delimited(3, Delimited(1, ""))));  // a node without its ID: 0
}

TEST_F(DeviceSnapshotWireTest, RepeatedFieldsLastWinsAndTopologiesMerge) {
  ExpectAgree(Delimited(1, Delimited(1, "first") + Delimited(2, "Healthy") + Delimited(1, "last")));
  ExpectAgree(Delimited(1, Delimited(2, "Healthy") + Delimited(2, "Unhealthy")));
  ExpectAgree(WireDevice("a", "Healthy", Topology({1, 2}) + Topology({2, 3})));
  ExpectAgree(WireDevice("a", "Healthy", Delimited(3, Delimited(1, Node(4) + Node(5)))));
}

TEST_F(DeviceSnapshotWireTest, UnknownFieldsAndUnexpectedWireTypesAreSkipped) {
  const std::string unknown = Tag(9, 0) + Varint(300) + Tag(10, 1) + std::string(8, 'x') +
                              Delimited(11, "bytes") + Tag(12, 5) + std::string(4, 'y') +
                              Tag(13, 3) + Tag(14, 0) + Varint(1) + Tag(13, 4);
  ExpectAgree(unknown + WireDevice("a", "Healthy") + unknown);
  ExpectAgree(WireDevice("a", "Healthy", unknown + Topology({1})));
  ExpectAgree(WireDevice("a", "Healthy", Delimited(3, unknown + Delimited(1, unknown + Node(2)))));
  // Known field numbers with another wire type.
  ExpectAgree(Tag(1, 0) + Varint(5) + WireDevice("a", "Healthy"));
  ExpectAgree(Delimited(1, Tag(1, 0) + Varint(7) + Tag(2, 5) + "abcd" + Delimited(2, "Healthy")));
  ExpectAgree(WireDevice("a", "Healthy", Delimited(3, Delimited(1, Delimited(1, "not a varint")))));
}

TEST_F(DeviceSnapshotWireTest, MalformedTagsAndWireTypes) {
  ExpectAgree(std::string("\0", 1));  // tag 0
  ExpectAgree(Tag(1, 4));             // an end-group with no group
  ExpectAgree(Tag(1, 6) + "x");       // no such wire type
  ExpectAgree(Tag(1, 7) + "x");
  ExpectAgree(Tag(0, 2) + Varint(0));                                   // field number 0
  ExpectAgree(WireDevice("a", "Healthy", Tag(5, 4)));                   // inside a message
  ExpectAgree(std::string("\x80", 1));                                  // a tag cut off
  ExpectAgree(std::string("\x8a\x80\x80\x80\x00", 5) + Varint(0));      // field 1 in five bytes
  ExpectAgree(std::string("\x8a\x80\x80\x80\x10", 5) + Varint(0));      // wraps at 32 bits
  ExpectAgree(std::string("\x8a\x80\x80\x80\x80\x00", 6) + Varint(0));  // six bytes
}

TEST_F(DeviceSnapshotWireTest, MalformedLengthsAndVarints) {
  ExpectAgree(Tag(1, 2) + Varint(5) + "abc");                       // beyond the message
  ExpectAgree(Tag(1, 2) + std::string("\x80\x80\x80\x80\x08", 5));  // 2^31
  ExpectAgree(Tag(1, 2) + std::string("\x80\x80\x80\x80\x07", 5));  // just under, too long
  ExpectAgree(Tag(1, 2) + std::string("\x80\x80\x80\x80\x80\x00", 6));
  ExpectAgree(Tag(1, 2) + std::string("\x80\x80\x80\x80\x00", 5));  // 0 in five bytes
  const std::string ten(9, '\xff');
  ExpectAgree(WireDevice("a", "H", Delimited(3, Delimited(1, Tag(1, 0) + ten + "\x01"))));
  ExpectAgree(WireDevice("a", "H", Delimited(3, Delimited(1, Tag(1, 0) + ten + "\x7f"))));
  ExpectAgree(WireDevice("a", "H",
                         Delimited(3, Delimited(1, Tag(1, 0) + ten + std::string("\x80\x00", 2)))));
  ExpectAgree(Tag(9, 0) + ten + "\xff\x01");  // eleven bytes
  ExpectAgree(Tag(9, 1) + "1234567");         // fixed64 cut off
  ExpectAgree(Tag(9, 5) + "123");             // fixed32 cut off
}

TEST_F(DeviceSnapshotWireTest, StringsMustBeUtf8) {
  for (const std::string& bad : {std::string("\xff"), std::string("\xc0\x80"),  // overlong
                                 std::string("\xed\xa0\x80"),                   // a surrogate
                                 std::string("\xf4\x90\x80\x80"),               // above U+10FFFF
                                 std::string("\x80"), std::string("\xe2\x82")}) {
    ExpectAgree(WireDevice(bad, "Healthy"));
    ExpectAgree(WireDevice("a", bad));
    // Refused even when a later value replaces it.
    ExpectAgree(Delimited(1, Delimited(1, bad) + Delimited(1, "b")));
    // Unknown fields are not checked.
    ExpectAgree(Delimited(9, bad) + Delimited(1, Delimited(9, bad)));
  }
  ExpectAgree(WireDevice("\xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbf", "Healthy"));
}

TEST_F(DeviceSnapshotWireTest, GroupsAndTheRecursionLimit) {
  const std::string group = Tag(9, 3) + Tag(9, 4);
  ExpectAgree(group + WireDevice("a", "Healthy"));
  ExpectAgree(Tag(9, 3) + Tag(8, 4));                   // ended by another field
  ExpectAgree(Tag(9, 3) + WireDevice("a", "Healthy"));  // never ended
  ExpectAgree(Tag(9, 3) + std::string("\0", 1));
  // Nested groups, at every level of the known messages, around protobuf's limit of 100.
  for (int depth = 94; depth <= 102; ++depth) {
    std::string nested;
    for (int i = 0; i < depth; ++i) nested += Tag(static_cast<uint64_t>(20 + i), 3);
    for (int i = depth - 1; i >= 0; --i) nested += Tag(static_cast<uint64_t>(20 + i), 4);
    ExpectAgree(nested);
    ExpectAgree(Delimited(1, nested));
    ExpectAgree(WireDevice("a", "b", Delimited(3, nested)));
    ExpectAgree(WireDevice("a", "b", Delimited(3, Delimited(1, nested))));
  }
}

TEST_F(DeviceSnapshotWireTest, EveryTruncationOfAMessage) {
  const std::string message = WireDevice("gpu-0", "Healthy", Topology({0, 1})) +
                              WireDevice("gpu-1", "Unhealthy", Tag(7, 1) + "12345678") + Tag(9, 3) +
                              Delimited(4, "x") + Tag(9, 4);
  for (size_t size = 0; size <= message.size(); ++size) ExpectAgree(message.substr(0, size));
}

// Random snapshots, each mutated many times: bytes flipped, inserted, removed, repeated, cut.
TEST_F(DeviceSnapshotWireTest, RandomMutationsOfSnapshots) {
  std::mt19937 random(20261127);
  auto pick = [&random](size_t n) {
    return std::uniform_int_distribution<size_t>(0, n == 0 ? 0 : n - 1)(random);
  };
  const std::vector<std::string> healths = {"Healthy", "Unhealthy", "", "healthy"};
  int agreed_valid = 0;
  for (int snapshot = 0; snapshot < 200; ++snapshot) {
    v1beta1::ListAndWatchResponse response;
    const size_t devices = pick(6);
    for (size_t d = 0; d < devices; ++d) {
      v1beta1::Device* device = response.add_devices();
      device->set_id(absl::StrCat("dev-", pick(4)));
      device->set_health(healths[pick(healths.size())]);
      const size_t nodes = pick(4);
      for (size_t n = 0; n < nodes; ++n) {
        device->mutable_topology()->add_nodes()->set_id(static_cast<int64_t>(pick(3)) - 1);
      }
    }
    const std::string base = response.SerializeAsString();
    ExpectAgree(base);
    for (int round = 0; round < 100; ++round) {
      std::string bytes = base;
      const size_t edits = 1 + pick(3);
      for (size_t e = 0; e < edits; ++e) {
        const size_t at = pick(bytes.size() + 1);
        switch (pick(5)) {
          case 0:
            if (at < bytes.size()) bytes[at] = static_cast<char>(pick(256));
            break;
          case 1:
            bytes.insert(at, 1, static_cast<char>(pick(256)));
            break;
          case 2:
            bytes.erase(at, 1 + pick(4));
            break;
          case 3:
            bytes.insert(at, bytes.substr(pick(bytes.size() + 1), 1 + pick(8)));
            break;
          default:
            bytes.resize(at);
            break;
        }
      }
      ExpectAgree(bytes);
      if (ByProtobuf(bytes).has_value()) ++agreed_valid;
      if (HasFatalFailure()) return;
    }
  }
  // The mutations must reach both outcomes, or the comparison proves little.
  EXPECT_GT(agreed_valid, 1000);
  EXPECT_LT(agreed_valid, 19000);
}

}  // namespace
}  // namespace devmgr::devicemanager
