#include "devicemanager/pod_devices.h"

#include <algorithm>
#include <atomic>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "common/deterministic_bytes.h"

namespace devmgr::devicemanager {

void PodDevices::MarkChanged() {
  static std::atomic<uint64_t> last_revision{0};
  revision_ = last_revision.fetch_add(1, std::memory_order_relaxed) + 1;
}

void PodDevices::MarkPodChanged(absl::string_view pod_uid) {
  MarkChanged();
  changes_.Record(revision_, std::string(pod_uid));
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
  Unhold(it->first, stored.devices);
  Hold(it->first, allocation.devices);
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
  Unhold(it->first, it->second.devices);
  allocations_.erase(it);
  MarkPodChanged(pod_uid);
}

void PodDevices::Hold(const Key& key, const checkpoint::DevicesPerNuma& devices) {
  if (devices.empty()) return;
  auto resource = held_.find(key.resource_name);
  if (resource == held_.end()) {
    resource =
        held_.emplace(key.resource_name, std::map<std::string, Holders, std::less<>>()).first;
  }
  auto& by_id = resource->second;
  for (const auto& [numa, ids] : devices) {
    for (const std::string& id : ids) {
      auto it = by_id.find(id);
      if (it == by_id.end()) it = by_id.emplace(id, Holders()).first;
      it->second.push_back(&key);
    }
  }
  if (by_id.empty()) held_.erase(resource);
}

void PodDevices::Unhold(const Key& key, const checkpoint::DevicesPerNuma& devices) {
  auto resource = held_.find(key.resource_name);
  if (resource == held_.end()) return;
  auto& by_id = resource->second;
  for (const auto& [numa, ids] : devices) {
    for (const std::string& id : ids) {
      auto it = by_id.find(id);
      if (it == by_id.end()) continue;
      Holders& holders = it->second;
      if (auto holder = std::find(holders.begin(), holders.end(), &key); holder != holders.end()) {
        holders.erase(holder);
      }
      if (holders.empty()) by_id.erase(it);
    }
  }
  if (by_id.empty()) held_.erase(resource);
}

bool PodDevices::Holds(absl::string_view resource_name, absl::string_view device_id) const {
  auto resource = held_.find(resource_name);
  return resource != held_.end() && resource->second.find(device_id) != resource->second.end();
}

std::optional<std::pair<std::string, std::string>> PodDevices::PodAndContainerForDevice(
    absl::string_view resource_name, absl::string_view device_id) const {
  auto resource = held_.find(resource_name);
  if (resource == held_.end()) return std::nullopt;
  auto it = resource->second.find(device_id);
  if (it == resource->second.end()) return std::nullopt;
  // Never empty: a device without holders leaves the index.
  const Key* first =
      *std::min_element(it->second.begin(), it->second.end(),
                        [](const Key* a, const Key* b) { return KeyLess()(*a, *b); });
  return std::make_pair(first->pod_uid, first->container_name);
}

std::vector<std::string> PodDevices::PodsHolding(absl::string_view resource_name) const {
  std::set<std::string> pods;
  if (auto resource = held_.find(resource_name); resource != held_.end()) {
    for (const auto& [id, holders] : resource->second) {
      for (const Key* key : holders) pods.insert(key->pod_uid);
    }
  }
  return {pods.begin(), pods.end()};
}

bool PodDevices::HoldsAny(absl::string_view resource_name) const {
  return held_.find(resource_name) != held_.end();
}

IdSet PodDevices::NotHeld(absl::string_view resource_name, const DeviceTable& devices) const {
  auto resource = held_.find(resource_name);
  const std::map<std::string, Holders, std::less<>> kNone;
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
      Unhold(it->first, it->second.devices);
      it = allocations_.erase(it);
    }
    MarkPodChanged(uid);
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
  for (const auto& [resource, by_id] : held_) {
    auto& ids = result[resource];
    for (const auto& [id, holders] : by_id) ids.insert(ids.end(), id);
  }
  return result;
}

std::map<std::string, int64_t> PodDevices::HeldCounts() const {
  std::map<std::string, int64_t> counts;
  for (const auto& [resource, by_id] : held_) {
    counts.emplace_hint(counts.end(), resource, static_cast<int64_t>(by_id.size()));
  }
  return counts;
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

PodDevices PodDevices::FromCheckpoint(std::vector<checkpoint::PodDevicesEntry> entries,
                                      std::vector<std::string>* skipped) {
  PodDevices result;
  // A kubelet writes its entries in no order: sorted first, they all take the in-order path
  // below. Stably, so that of two entries for one key the later still replaces the earlier.
  const auto entry_less = [](const checkpoint::PodDevicesEntry& a,
                             const checkpoint::PodDevicesEntry& b) {
    return KeyLess()(KeyView{a.pod_uid, a.container_name, a.resource_name},
                     KeyView{b.pod_uid, b.container_name, b.resource_name});
  };
  if (!std::is_sorted(entries.begin(), entries.end(), entry_less)) {
    std::stable_sort(entries.begin(), entries.end(), entry_less);
  }
  for (checkpoint::PodDevicesEntry& entry : entries) {
    v1beta1::ContainerAllocateResponse response;
    if (!response.ParseFromString(entry.alloc_resp)) {
      if (skipped != nullptr) {
        skipped->push_back(
            absl::StrCat(entry.pod_uid, "/", entry.container_name, "/", entry.resource_name));
      }
      continue;
    }
    Allocations& allocations = result.allocations_;
    if (!allocations.empty() &&
        !KeyLess()(std::prev(allocations.end())->first,
                   KeyView{entry.pod_uid, entry.container_name, entry.resource_name})) {
      // Repeated (the later one replaces the earlier): the general path.
      result.Insert(entry.pod_uid, entry.container_name, entry.resource_name,
                    {std::move(entry.device_ids), std::move(response)});
      continue;
    }
    // In key order: rendered from the entry itself and put at the end of the map, without a
    // search or a copy of its devices.
    entry.alloc_resp = DeterministicBytes(response);
    auto rendered =
        std::make_shared<const checkpoint::EncodedEntry>(checkpoint::EncodeEntry(entry));
    auto it =
        allocations.emplace_hint(allocations.end(),
                                 Key{std::move(entry.pod_uid), std::move(entry.container_name),
                                     std::move(entry.resource_name)},
                                 Stored{std::move(entry.device_ids), std::move(rendered), 0});
    result.Hold(it->first, it->second.devices);
  }
  // One revision for everything restored.
  result.MarkChanged();
  result.changes_.Reset(result.revision_);
  for (auto& [key, stored] : result.allocations_) stored.pod_revision = result.revision_;
  return result;
}

}  // namespace devmgr::devicemanager
