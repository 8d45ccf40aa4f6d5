// Reservations: the bookkeeping of pod admissions between picking devices and committing them
// to PodDevices. It holds the devices reserved by admissions in flight (in use for every other
// admission, but held by no container yet), which (pod, container, resource) allocations are in
// flight, and the devices of each pod's regular init containers that the pod's later containers
// may reuse (upstream's devicesToReuse, kept per pod because admissions of different pods run in
// parallel here).
//
// A plain value class with no lock of its own: the manager keeps it under its mutex, beside
// PodDevices.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/string_view.h"
#include "devicemanager/id_set.h"

namespace devmgr::devicemanager {

// ReservedDevices: the devices of one resource reserved for one container.
struct ReservedDevices {
  std::string resource;
  // Every device of the container for this resource, in pick order.
  std::vector<std::string> ids;
  // The subset newly taken from the free pool (see Reserve).
  std::vector<std::string> new_ids;
  // The subset taken from the pod's reusable devices (see TakeReusable).
  std::vector<std::string> from_reuse;
};

class Reservations {
 public:
  // Resource -> device IDs, the reusable devices of one pod.
  using ReusableDevices = std::map<std::string, std::set<std::string>>;

  // Begin marks the allocation of `resource` to one container as in flight: false (and nothing
  // changes) when one is already, which the caller refuses rather than race.
  bool Begin(absl::string_view pod_uid, absl::string_view container_name,
             absl::string_view resource);

  // TakeReusable moves up to `count` of the pod's reusable devices of `devices.resource`, in ID
  // order, into `devices` (ids and from_reuse); they stop being reusable. Returns how many.
  int64_t TakeReusable(absl::string_view pod_uid, int64_t count, ReservedDevices& devices);

  // Reserve takes free device `id` for `devices` (ids and new_ids): reserved until released or
  // committed.
  void Reserve(const std::string& id, ReservedDevices& devices);

  // IsReserved: whether device `id` of `resource` is reserved by an admission in flight.
  bool IsReserved(absl::string_view resource, const std::string& id) const;
  // EraseReserved removes from `ids` every device of `resource` that is reserved.
  void EraseReserved(absl::string_view resource, IdSet& ids) const;

  // Release ends an allocation that gave up: its reserved devices are free again, it is no
  // longer in flight, and `reusable_again` (those of the devices it took from reuse that the
  // pod may still reuse) are reusable again.
  void Release(absl::string_view pod_uid, absl::string_view container_name,
               const ReservedDevices& devices, const std::vector<std::string>& reusable_again);
  // Commit ends an allocation whose devices the container now holds: they leave the
  // reservations, and with `reusable_by_pod` (a regular init container) they become reusable
  // by the pod's later containers.
  void Commit(absl::string_view pod_uid, absl::string_view container_name,
              const ReservedDevices& devices, bool reusable_by_pod);

  // Reusable: the pod's reusable devices of `resource`.
  std::set<std::string> Reusable(absl::string_view pod_uid, absl::string_view resource) const;
  // MakeReusable and Unreusable add `ids` to, and take them from, the pod's reusable devices of
  // `resource` (an emptied entry is dropped): an admission rolled back after its checkpoint
  // write failed, and a container that already holds its devices (upstream's
  // addContainerAllocatedResources and removeContainerAllocatedResources, which Allocate calls
  // whether or not it allocated anything), say so through them.
  template <typename Ids>
  void MakeReusable(absl::string_view pod_uid, const std::string& resource, const Ids& ids) {
    if (ids.empty()) return;
    reusable_[std::string(pod_uid)][resource].insert(ids.begin(), ids.end());
  }
  template <typename Ids>
  void Unreusable(absl::string_view pod_uid, const std::string& resource, const Ids& ids) {
    auto pod = reusable_.find(pod_uid);
    if (pod == reusable_.end()) return;
    auto devices = pod->second.find(resource);
    if (devices == pod->second.end()) return;
    for (const std::string& id : ids) devices->second.erase(id);
    if (devices->second.empty()) pod->second.erase(devices);
    if (pod->second.empty()) reusable_.erase(pod);
  }
  // ForgetPod drops the pod's reusable devices; ForgetPodsNotIn those of every pod whose UID is
  // not in `sorted_uids` (sorted ascending).
  void ForgetPod(absl::string_view pod_uid);
  void ForgetPodsNotIn(const std::vector<std::string>& sorted_uids);

 private:
  // Done is what Release and Commit share: the allocation leaves the in-flight set and its
  // newly reserved devices leave reserved_.
  void Done(absl::string_view pod_uid, absl::string_view container_name,
            const ReservedDevices& devices);

  // Resource name -> devices reserved by admissions in flight.
  std::map<std::string, std::set<std::string>, std::less<>> reserved_;
  // Pod UID -> its reusable devices. Dropped with the pod.
  std::map<std::string, ReusableDevices, std::less<>> reusable_;
  // (pod UID, container name, resource name) of the allocations in flight.
  std::set<std::tuple<std::string, std::string, std::string>> in_flight_;
};

}  // namespace devmgr::devicemanager
