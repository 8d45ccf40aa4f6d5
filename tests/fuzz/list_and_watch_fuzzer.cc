// libFuzzer target for what the device manager makes of a ListAndWatch snapshot: the bytes a
// plugin sends, read into devices (DevicesFromWire, in the stream reactor) and into the
// resource's device table, which also answers which devices are healthy (DeviceTable, in
// OnDevicesUpdated). Beyond "no crash": DevicesFromWire refuses exactly what protobuf's parse
// refuses, and the result must describe protobuf's message: one entry per distinct ID, with the
// health and NUMA nodes of that ID's last entry, and health sets that split the IDs so that
// capacity (healthy + unhealthy) is the number of devices.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "devicemanager/device_snapshot.h"
#include "devicemanager/device_table.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "tests/fuzz/invariant.h"

using devmgr::devicemanager::Device;
using devmgr::devicemanager::DeviceTable;
using devmgr::devicemanager::Health;
using devmgr::fuzz::Invariant;

namespace {

// The NUMA nodes of a wire device, each once, in order of first mention.
std::vector<int64_t> DistinctNodes(const v1beta1::Device& wire) {
  std::vector<int64_t> nodes;
  std::set<int64_t> seen;
  for (const auto& node : wire.topology().nodes()) {
    if (seen.insert(node.id()).second) nodes.push_back(node.id());
  }
  return nodes;
}

void IgnoreProtobufLog(google::protobuf::LogLevel /*level*/, const char* /*filename*/, int /*line*/,
                       const std::string& /*message*/) {}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // Protobuf logs every string field with invalid UTF-8; the refusal itself is what counts.
  google::protobuf::SetLogHandler(&IgnoreProtobufLog);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  v1beta1::ListAndWatchResponse response;
  const bool parses = response.ParseFromArray(data, static_cast<int>(size));
  auto read = devmgr::devicemanager::DevicesFromWire(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  Invariant(read.ok() == parses, "refused exactly when protobuf refuses");
  // What does not parse (invalid UTF-8 in a string field among it) ends the stream and never
  // reaches the manager.
  if (!parses) return 0;

  std::vector<Device> devices = *std::move(read);
  Invariant(devices.size() == static_cast<size_t>(response.devices_size()),
            "one device per wire entry, in order");
  std::map<std::string, const v1beta1::Device*> last;
  for (int i = 0; i < response.devices_size(); ++i) {
    const v1beta1::Device& wire = response.devices(i);
    const Device& device = devices[static_cast<size_t>(i)];
    Invariant(device.id == wire.id(), "the ID is kept byte for byte");
    Invariant(device.numa_nodes == DistinctNodes(wire), "each NUMA node once, in order");
    last[wire.id()] = &wire;
  }

  const DeviceTable table(std::move(devices));
  Invariant(table.size() == last.size(), "one entry per distinct ID");
  size_t healthy_count = 0;
  for (const auto& [id, wire] : last) {
    const Device* device = table.Find(id);
    Invariant(device != nullptr, "every ID is in the table");
    const bool healthy = wire->health() == "Healthy";
    if (healthy) ++healthy_count;
    Invariant(device->id == id, "the table finds the device by its ID");
    Invariant((device->health == Health::kHealthy) == healthy,
              "health is the last entry's, by upstream's rule");
    Invariant(device->numa_nodes == DistinctNodes(*wire), "topology is the last entry's");
    Invariant(table.IsHealthy(id) == healthy, "the table's health lookup agrees with the device");
  }
  Invariant(table.healthy_count() == healthy_count,
            "healthy devices counted once each: none counted twice or missed");
  Invariant(table.HealthyIds().size() == healthy_count, "the healthy IDs are the healthy devices");
  return 0;
}
