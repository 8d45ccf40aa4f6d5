#include "devicemanager/pod_devices.h"

#include <atomic>

#include "absl/strings/str_cat.h"
#include "common/deterministic_bytes.h"

namespace devmgr::devicemanager {

void PodDevices::MarkChanged() {
  static std::atomic<uint64_t> last_revision{0};
  revision_ = last_revision.fetch_add(1, std::memory_order_relaxed) + 1;
}

void PodDevices::MarkPodChanged(absl::string_view pod_uid) {
  MarkChanged();
  for (auto it = PodBegin(pod_uid); it != allocations_.end() && it->first.pod_uid == pod_uid;
       ++it) {
    it->second.pod_revision = revision_;
  }
}

PodDevices::Allocations::iterator PodDevices::PodBegin(absl::string_view pod_uid) {
  return allocations_.lower_bound(KeyView{pod_uid, {}, {}});
}

PodDevices::Allocations::const_iterator PodDevices::PodBegin(absl::string_view pod_uid) const {
  return allocations_.lower_bound(KeyView{pod_uid, {}, {}});
}

void PodDevices::Insert(absl::string_view pod_uid, absl::string_view container_name,
                        absl::string_view resource_name, ContainerAllocation allocation) {
  auto it = allocations_.find(KeyView{pod_uid, container_name, resource_name});
  if (it == allocations_.end()) {
    it = allocations_
             .emplace(
                 Key{std::string(pod_uid), std::string(container_name), std::string(resource_name)},
                 Stored())
             .first;
  }
  Stored& stored = it->second;
  CountHeld(resource_name, stored.devices, -1);
  CountHeld(resource_name, allocation.devices, +1);
  stored.devices = std::move(allocation.devices);
  stored.rendered = std::make_shared<const checkpoint::EncodedEntry>(checkpoint::EncodeEntry(
      {std::string(pod_uid), std::string(container_name), std::string(resource_name),
       stored.devices, DeterministicBytes(allocation.response)}));
  MarkPodChanged(pod_uid);
}

void PodDevices::Remove(absl::string_view pod_uid, absl::string_view container_name,
                        absl::string_view resource_name) {
  auto it = allocations_.find(KeyView{pod_uid, container_name, resource_name});
  if (it == allocations_.end()) return;
  CountHeld(resource_name, it->second.devices, -1);
  allocations_.erase(it);
  MarkPodChanged(pod_uid);
}

void PodDevices::CountHeld(absl::string_view resource_name,
                           const checkpoint::DevicesPerNuma& devices, int delta) {
  if (devices.empty()) return;
  auto resource = held_.find(resource_name);
  if (resource == held_.end()) {
    if (delta < 0) return;
    resource =
        held_.emplace(std::string(resource_name), std::map<std::string, int, std::less<>>()).first;
  }
  auto& counts = resource->second;
  for (const auto& [numa, ids] : devices) {
    for (const std::string& id : ids) {
      auto it = counts.find(id);
      if (delta > 0) {
        if (it == counts.end()) it = counts.emplace(id, 0).first;
        it->second += delta;
      } else if (it != counts.end() && (it->second += delta) <= 0) {
        counts.erase(it);
      }
    }
  }
  if (counts.empty()) held_.erase(resource);
}

bool PodDevices::Holds(absl::string_view resource_name, absl::string_view device_id) const {
  auto resource = held_.find(resource_name);
  return resource != held_.end() && resource->second.find(device_id) != resource->second.end();
}

bool PodDevices::HoldsAny(absl::string_view resource_name) const {
  return held_.find(resource_name) != held_.end();
}

IdSet PodDevices::NotHeld(absl::string_view resource_name, const DeviceTable& devices) const {
  auto resource = held_.find(resource_name);
  const std::map<std::string, int, std::less<>> kNone;
  const auto& counts = resource == held_.end() ? kNone : resource->second;
  std::vector<std::string> out;
  out.reserve(devices.healthy_count());
  auto held = counts.begin();
  for (const Device& device : devices) {
    if (device.health != Health::kHealthy) continue;
    while (held != counts.end() && held->first < device.id) ++held;
    if (held != counts.end() && held->first == device.id) continue;
    out.push_back(device.id);
  }
  return IdSet(std::move(out));
}

void PodDevices::Delete(const std::vector<std::string>& pod_uids) {
  for (const auto& uid : pod_uids) {
    auto it = PodBegin(uid);
    if (it == allocations_.end() || it->first.pod_uid != uid) continue;
    while (it != allocations_.end() && it->first.pod_uid == uid) {
      CountHeld(it->first.resource_name, it->second.devices, -1);
      it = allocations_.erase(it);
    }
    MarkChanged();
  }
}

bool PodDevices::HasPod(absl::string_view pod_uid) const {
  auto it = PodBegin(pod_uid);
  return it != allocations_.end() && it->first.pod_uid == pod_uid;
}

uint64_t PodDevices::PodRevision(absl::string_view pod_uid) const {
  auto it = PodBegin(pod_uid);
  return it != allocations_.end() && it->first.pod_uid == pod_uid ? it->second.pod_revision : 0;
}

std::vector<std::string> PodDevices::PodsNotIn(const std::vector<std::string>& sorted_uids) const {
  std::vector<std::string> out;
  auto other = sorted_uids.begin();
  for (auto it = allocations_.begin(); it != allocations_.end();) {
    const std::string& uid = it->first.pod_uid;
    while (other != sorted_uids.end() && *other < uid) ++other;
    if (other == sorted_uids.end() || *other != uid) out.push_back(uid);
    // Past the pod's other allocations.
    do {
      ++it;
    } while (it != allocations_.end() && it->first.pod_uid == uid);
  }
  return out;
}

const PodDevices::Stored* PodDevices::FindStored(absl::string_view pod_uid,
                                                 absl::string_view container_name,
                                                 absl::string_view resource_name) const {
  auto it = allocations_.find(KeyView{pod_uid, container_name, resource_name});
  return it == allocations_.end() ? nullptr : &it->second;
}

const checkpoint::DevicesPerNuma* PodDevices::FindDevices(absl::string_view pod_uid,
                                                          absl::string_view container_name,
                                                          absl::string_view resource_name) const {
  const Stored* stored = FindStored(pod_uid, container_name, resource_name);
  return stored == nullptr ? nullptr : &stored->devices;
}

std::optional<v1beta1::ContainerAllocateResponse> PodDevices::Response(
    absl::string_view pod_uid, absl::string_view container_name,
    absl::string_view resource_name) const {
  const Stored* stored = FindStored(pod_uid, container_name, resource_name);
  if (stored == nullptr) return std::nullopt;
  v1beta1::ContainerAllocateResponse response;
  if (!response.ParseFromString(stored->rendered->alloc_resp)) return std::nullopt;
  return response;
}

ResourceDevices PodDevices::ContainerDevices(absl::string_view pod_uid,
                                             absl::string_view container_name) const {
  ResourceDevices result;
  for (auto it = allocations_.lower_bound(KeyView{pod_uid, container_name, {}});
       it != allocations_.end() && it->first.pod_uid == pod_uid &&
       it->first.container_name == container_name;
       ++it) {
    const std::string& resource = it->first.resource_name;
    const Stored& stored = it->second;
    DeviceMap devices;
    for (const auto& [numa, ids] : stored.devices) {
      for (const auto& id : ids) {
        Device& device = devices[id];
        device.id = id;
        if (numa != checkpoint::kNoNumaNode) device.numa_nodes.push_back(numa);
      }
    }
    if (!devices.empty()) result[resource] = std::move(devices);
  }
  return result;
}

std::map<std::string, std::set<std::string>> PodDevices::DeviceIds() const {
  std::map<std::string, std::set<std::string>> result;
  for (const auto& [resource, counts] : held_) {
    auto& ids = result[resource];
    for (const auto& [id, count] : counts) ids.insert(ids.end(), id);
  }
  return result;
}

std::vector<checkpoint::PodDevicesEntry> PodDevices::ToCheckpoint() const {
  std::vector<checkpoint::PodDevicesEntry> entries;
  entries.reserve(allocations_.size());
  for (const auto& [key, stored] : allocations_) {
    checkpoint::PodDevicesEntry& entry = entries.emplace_back();
    entry.pod_uid = key.pod_uid;
    entry.container_name = key.container_name;
    entry.resource_name = key.resource_name;
    entry.device_ids = stored.devices;
    entry.alloc_resp = stored.rendered->alloc_resp;
  }
  return entries;
}

std::vector<std::shared_ptr<const checkpoint::EncodedEntry>> PodDevices::RenderedEntries() const {
  std::vector<std::shared_ptr<const checkpoint::EncodedEntry>> entries;
  entries.reserve(allocations_.size());
  for (const auto& [key, stored] : allocations_) entries.push_back(stored.rendered);
  return entries;
}

PodDevices PodDevices::FromCheckpoint(const std::vector<checkpoint::PodDevicesEntry>& entries,
                                      std::vector<std::string>* skipped) {
  PodDevices result;
  for (const auto& entry : entries) {
    ContainerAllocation allocation;
    if (!allocation.response.ParseFromString(entry.alloc_resp)) {
      if (skipped != nullptr) {
        skipped->push_back(
            absl::StrCat(entry.pod_uid, "/", entry.container_name, "/", entry.resource_name));
      }
      continue;
    }
    allocation.devices = entry.device_ids;
    result.Insert(entry.pod_uid, entry.container_name, entry.resource_name, std::move(allocation));
  }
  return result;
}

}  // namespace devmgr::devicemanager
