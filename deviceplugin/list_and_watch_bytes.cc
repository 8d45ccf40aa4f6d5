#include "deviceplugin/list_and_watch_bytes.h"

#include <google/protobuf/io/coded_stream.h>
#include <grpcpp/support/slice.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace devmgr::deviceplugin {
namespace {

using google::protobuf::io::CodedOutputStream;

// Tags (field number << 3 | wire type) of the fields written, all field 1 to 3. Wire type 2 is
// length-delimited, 0 a varint.
constexpr uint8_t kDevicesTag = (1 << 3) | 2;   // ListAndWatchResponse.devices
constexpr uint8_t kIdTag = (1 << 3) | 2;        // Device.ID
constexpr uint8_t kHealthTag = (2 << 3) | 2;    // Device.health
constexpr uint8_t kTopologyTag = (3 << 3) | 2;  // Device.topology
constexpr uint8_t kNodesTag = (1 << 3) | 2;     // TopologyInfo.nodes
constexpr uint8_t kNodeIdTag = (1 << 3) | 0;    // NUMANode.ID

// A length-delimited field's bytes: its tag (one byte for the fields here), length and value.
size_t DelimitedSize(size_t size) {
  return 1 + CodedOutputStream::VarintSize32(static_cast<uint32_t>(size)) + size;
}

// A NUMANode's body: its ID as a varint (int64: a negative one takes ten bytes), none for 0.
size_t NodeSize(int64_t id) {
  return id == 0 ? 0 : 1 + CodedOutputStream::VarintSize64(static_cast<uint64_t>(id));
}

size_t TopologySize(const std::vector<int64_t>& numa_nodes) {
  size_t size = 0;
  for (int64_t id : numa_nodes) size += DelimitedSize(NodeSize(id));
  return size;
}

size_t DeviceSize(const std::string& id, const DeviceInfo& info) {
  size_t size = DelimitedSize(HealthString(info.health).size());
  if (!id.empty()) size += DelimitedSize(id.size());
  if (!info.numa_nodes.empty()) size += DelimitedSize(TopologySize(info.numa_nodes));
  return size;
}

uint8_t* WriteDelimitedHeader(uint8_t tag, size_t size, uint8_t* out) {
  *out++ = tag;
  return CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(size), out);
}

uint8_t* WriteString(uint8_t tag, absl::string_view value, uint8_t* out) {
  out = WriteDelimitedHeader(tag, value.size(), out);
  std::memcpy(out, value.data(), value.size());
  return out + value.size();
}

uint8_t* WriteDevice(const std::string& id, const DeviceInfo& info, size_t size, uint8_t* out) {
  out = WriteDelimitedHeader(kDevicesTag, size, out);
  if (!id.empty()) out = WriteString(kIdTag, id, out);
  out = WriteString(kHealthTag, HealthString(info.health), out);
  if (info.numa_nodes.empty()) return out;
  out = WriteDelimitedHeader(kTopologyTag, TopologySize(info.numa_nodes), out);
  for (int64_t node : info.numa_nodes) {
    out = WriteDelimitedHeader(kNodesTag, NodeSize(node), out);
    if (node == 0) continue;
    *out++ = kNodeIdTag;
    out = CodedOutputStream::WriteVarint64ToArray(static_cast<uint64_t>(node), out);
  }
  return out;
}

// What a device usually takes: a short ID, a health. Only a first guess; the buffer grows.
constexpr size_t kTypicalDeviceBytes = 32;

}  // namespace

grpc::ByteBuffer ListAndWatchBytes(const DeviceMap& devices) {
  // One pass: a device is sized and written while its map node is in the cache (with 100,000
  // devices, walking the map's scattered nodes is most of the cost).
  auto bytes = std::make_unique<std::string>();
  bytes->reserve(devices.size() * kTypicalDeviceBytes);
  for (const auto& [id, info] : devices) {
    const size_t size = DeviceSize(id, info);
    const size_t at = bytes->size();
    bytes->resize(at + DelimitedSize(size));
    WriteDevice(id, info, size, reinterpret_cast<uint8_t*>(bytes->data() + at));
  }
  // The slice takes the string over: the message is sent from it, without a copy.
  std::string* owned = bytes.release();
  grpc::Slice slice(
      owned->data(), owned->size(), [](void* string) { delete static_cast<std::string*>(string); },
      owned);
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace devmgr::deviceplugin
