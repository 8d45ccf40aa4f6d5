#include "devicemanager/reservations.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace devmgr::devicemanager {

bool Reservations::Begin(absl::string_view pod_uid, absl::string_view container_name,
                         absl::string_view resource) {
  return in_flight_.emplace(pod_uid, container_name, resource).second;
}

int64_t Reservations::TakeReusable(absl::string_view pod_uid, int64_t count,
                                   ReservedDevices& devices) {
  auto pod = reusable_.find(pod_uid);
  if (pod == reusable_.end()) return 0;
  auto reusable = pod->second.find(devices.resource);
  if (reusable == pod->second.end()) return 0;
  int64_t taken = 0;
  for (auto it = reusable->second.begin(); it != reusable->second.end() && taken < count; ++taken) {
    devices.ids.push_back(*it);
    devices.from_reuse.push_back(*it);
    it = reusable->second.erase(it);
  }
  return taken;
}

void Reservations::Reserve(const std::string& id, ReservedDevices& devices) {
  reserved_[devices.resource].insert(id);
  devices.ids.push_back(id);
  devices.new_ids.push_back(id);
}

bool Reservations::IsReserved(absl::string_view resource, const std::string& id) const {
  auto it = reserved_.find(resource);
  return it != reserved_.end() && it->second.contains(id);
}

void Reservations::EraseReserved(absl::string_view resource, IdSet& ids) const {
  if (auto it = reserved_.find(resource); it != reserved_.end()) ids.EraseAll(it->second);
}

void Reservations::Done(absl::string_view pod_uid, absl::string_view container_name,
                        const ReservedDevices& devices) {
  in_flight_.erase({std::string(pod_uid), std::string(container_name), devices.resource});
  auto reserved = reserved_.find(devices.resource);
  if (reserved == reserved_.end()) return;
  for (const auto& id : devices.new_ids) reserved->second.erase(id);
  if (reserved->second.empty()) reserved_.erase(reserved);
}

void Reservations::Release(absl::string_view pod_uid, absl::string_view container_name,
                           const ReservedDevices& devices,
                           const std::vector<std::string>& reusable_again) {
  Done(pod_uid, container_name, devices);
  MakeReusable(pod_uid, devices.resource, reusable_again);
}

void Reservations::Commit(absl::string_view pod_uid, absl::string_view container_name,
                          const ReservedDevices& devices, bool reusable_by_pod) {
  Done(pod_uid, container_name, devices);
  // Devices taken from reuse already left the reusable set; a container that keeps its
  // devices (a sidecar, an app container) does not give them back.
  if (reusable_by_pod) MakeReusable(pod_uid, devices.resource, devices.ids);
}

std::set<std::string> Reservations::Reusable(absl::string_view pod_uid,
                                             absl::string_view resource) const {
  auto pod = reusable_.find(pod_uid);
  if (pod == reusable_.end()) return {};
  auto it = pod->second.find(std::string(resource));
  return it == pod->second.end() ? std::set<std::string>() : it->second;
}

void Reservations::ForgetPod(absl::string_view pod_uid) {
  if (auto pod = reusable_.find(pod_uid); pod != reusable_.end()) reusable_.erase(pod);
}

void Reservations::ForgetPodsNotIn(const std::vector<std::string>& sorted_uids) {
  for (auto it = reusable_.begin(); it != reusable_.end();) {
    it = std::binary_search(sorted_uids.begin(), sorted_uids.end(), it->first)
             ? std::next(it)
             : reusable_.erase(it);
  }
}

}  // namespace devmgr::devicemanager
