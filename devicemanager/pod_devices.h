// PodDevices: which devices each container of each pod holds, per resource, with the plugin's
// ContainerAllocateResponse for that container; upstream's podDevices. It is the allocation
// half of the checkpoint: it converts to and from checkpoint::PodDevicesEntry, so allocations
// restored from a kubelet's (or our own) checkpoint are written back on every later write.
//
// A plain value class with no lock of its own: the manager keeps it under its mutex. Movable but
// not copyable: its index of held devices points into its own allocations.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "checkpoint/checkpoint.h"
#include "common/change_log.h"
#include "devicemanager/device_table.h"
#include "devicemanager/id_set.h"
#include "devicemanager/types.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace devmgr::devicemanager {

// The devices of one resource held by one container.
struct ContainerAllocation {
  // NUMA node -> device IDs; a device on several nodes is under each, kNoNumaNode = none.
  checkpoint::DevicesPerNuma devices;
  v1beta1::ContainerAllocateResponse response;
};

class PodDevices {
 public:
  static constexpr size_t kChangesKept = 1024;

  PodDevices() = default;
  PodDevices(PodDevices&&) = default;
  PodDevices& operator=(PodDevices&&) = default;
  PodDevices(const PodDevices&) = delete;
  PodDevices& operator=(const PodDevices&) = delete;

  // Insert records (or replaces) the allocation of `resource` to one container.
  void Insert(absl::string_view pod_uid, absl::string_view container_name,
              absl::string_view resource_name, ContainerAllocation allocation);

  // Remove forgets one container's allocation of one resource (and the container or pod when
  // nothing is left).
  void Remove(absl::string_view pod_uid, absl::string_view container_name,
              absl::string_view resource_name);

  // Holds: whether any container holds device `device_id` of `resource_name`; HoldsAny: whether
  // any container holds a device of it. Both from an index kept up to date by every change, so
  // an admission does not walk every pod.
  bool Holds(absl::string_view resource_name, absl::string_view device_id) const;
  bool HoldsAny(absl::string_view resource_name) const;
  // NotHeld: the IDs of the healthy devices of `devices` that no container holds as devices
  // of `resource_name`, in order; one walk over the table and the index together.
  IdSet NotHeld(absl::string_view resource_name, const DeviceTable& devices) const;

  // PodAndContainerForDevice: the pod UID and container name of an allocation that lists device
  // `device_id` of `resource_name` (of several, the first in pod and container order), or
  // nullopt; from the index, without walking the pods. Upstream's getPodAndContainerForDevice
  // as the newest tree scopes it by resource: device IDs are unique only within a resource.
  // Devices reserved by an admission in flight are not here until committed.
  std::optional<std::pair<std::string, std::string>> PodAndContainerForDevice(
      absl::string_view resource_name, absl::string_view device_id) const;
  // PodsHolding: the UIDs of the pods holding any device of `resource_name`, in order.
  std::vector<std::string> PodsHolding(absl::string_view resource_name) const;

  // Delete forgets every allocation of the given pods.
  void Delete(const std::vector<std::string>& pod_uids);

  bool HasPod(absl::string_view pod_uid) const;
  // PodRevision is revision() as of the last change to that pod's allocations, 0 for a pod
  // that holds nothing: it changes whenever ContainerDevices of one of its containers may.
  uint64_t PodRevision(absl::string_view pod_uid) const;
  // PodsNotIn lists the pods holding anything whose UID is not in `sorted_uids` (sorted
  // ascending), in order: one walk over both, copying only the UIDs it returns.
  std::vector<std::string> PodsNotIn(const std::vector<std::string>& sorted_uids) const;

  // FindDevices is the devices of one container's allocation of one resource, or nullptr.
  const checkpoint::DevicesPerNuma* FindDevices(absl::string_view pod_uid,
                                                absl::string_view container_name,
                                                absl::string_view resource_name) const;
  // Response is the plugin's Allocate answer of that allocation, decoded from the checkpoint
  // encoding kept for it (only the encoding is kept, to hold less per container), or nullopt.
  std::optional<v1beta1::ContainerAllocateResponse> Response(absl::string_view pod_uid,
                                                             absl::string_view container_name,
                                                             absl::string_view resource_name) const;

  // ContainerDevices is what one container holds: resource -> device ID -> device, with
  // the NUMA nodes rebuilt from the per-node lists (upstream's getContainerDevices). Health
  // is left kHealthy: PodDevices does not know it.
  ResourceDevices ContainerDevices(absl::string_view pod_uid,
                                   absl::string_view container_name) const;

  // DeviceIds is every held device ID per resource, over all pods (upstream's devices()).
  std::map<std::string, std::set<std::string>> DeviceIds() const;
  // HeldCounts: how many of each resource's devices some pod holds (the sizes of DeviceIds).
  std::map<std::string, int64_t> HeldCounts() const;

  // ToCheckpoint gives one entry per (pod, container, resource), in key order, with the
  // response encoded deterministically (once, when it was inserted).
  std::vector<checkpoint::PodDevicesEntry> ToCheckpoint() const;
  // RenderedEntries: the same entries, in the same order, as rendered at insertion for
  // checkpoint::EncodeRendered; copying them is a pointer each.
  std::vector<std::shared_ptr<const checkpoint::EncodedEntry>> RenderedEntries() const;

  // FromCheckpoint rebuilds the allocations of `entries` (taken: their devices and names move
  // in). An entry whose response does not parse is left out (upstream logs and skips it) and
  // its "pod/container/resource" key is appended to `skipped`, if given. Of two entries for the
  // same allocation the later one is kept. Entries in key order (devmgr's own checkpoints) are
  // restored without a search each.
  static PodDevices FromCheckpoint(std::vector<checkpoint::PodDevicesEntry> entries,
                                   std::vector<std::string>* skipped = nullptr);

  bool empty() const { return allocations_.empty(); }

  // revision changes with every Insert, Remove and Delete that changes something. Revisions
  // come from one counter for the whole process, so two different PodDevices values (one
  // restored from a checkpoint and moved over another, say) never share a revision.
  uint64_t revision() const { return revision_; }
  // PodsChangedSince: the UIDs of the pods whose allocations changed after `revision` (one of
  // this value's revisions), sorted; nullopt when that is too far back to tell (only the last
  // kChangesKept changes are kept, and nothing from before the restore from a checkpoint).
  std::optional<std::vector<std::string>> PodsChangedSince(uint64_t revision) const {
    return changes_.Since(revision);
  }

 private:
  // One allocation: (pod UID, container name, resource name), ordered in that order, so that
  // a pod's allocations are one run of the map. One tree node per allocation: a pod of one
  // container and one resource took three nested maps' nodes before.
  struct Key {
    std::string pod_uid;
    std::string container_name;
    std::string resource_name;
  };
  struct KeyView {
    absl::string_view pod_uid;
    absl::string_view container_name;
    absl::string_view resource_name;
  };
  struct KeyLess {
    using is_transparent = void;
    static KeyView View(const Key& key) {
      return {key.pod_uid, key.container_name, key.resource_name};
    }
    static KeyView View(const KeyView& key) { return key; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      const KeyView x = View(a);
      const KeyView y = View(b);
      return std::tie(x.pod_uid, x.container_name, x.resource_name) <
             std::tie(y.pod_uid, y.container_name, y.resource_name);
    }
  };
  struct Stored {
    checkpoint::DevicesPerNuma devices;
    // The checkpoint entry, rendered once: shared with the writes in progress. Its alloc_resp
    // is the only copy of the Allocate answer, encoded deterministically.
    std::shared_ptr<const checkpoint::EncodedEntry> rendered;
    // The pod's revision (see PodRevision), the same in every allocation of the pod.
    uint64_t pod_revision = 0;
  };
  using Allocations = std::map<Key, Stored, KeyLess>;

  // PodBegin: the first allocation of `pod_uid`, or where it would be.
  Allocations::iterator PodBegin(absl::string_view pod_uid);
  Allocations::const_iterator PodBegin(absl::string_view pod_uid) const;
  // FindStored is one container's allocation of one resource, or nullptr.
  const Stored* FindStored(absl::string_view pod_uid, absl::string_view container_name,
                           absl::string_view resource_name) const;
  // Hold adds `key` as a holder of every device of `devices` in held_; Unhold takes it away
  // (once per listing, as Hold added it).
  void Hold(const Key& key, const checkpoint::DevicesPerNuma& devices);
  void Unhold(const Key& key, const checkpoint::DevicesPerNuma& devices);

  // MarkChanged takes the next revision.
  void MarkChanged();
  // MarkPodChanged takes the next revision and gives it to every allocation of `pod_uid`.
  void MarkPodChanged(absl::string_view pod_uid);

  Allocations allocations_;
  // resource name -> device ID -> the allocations that list it, once per listing (a pod's app
  // container may hold what its init container held, and a device on two NUMA nodes is listed
  // twice). The keys point into allocations_, whose nodes stay put until erased (and move with
  // the map), and leave here before their allocation does.
  using Holders = std::vector<const Key*>;
  std::map<std::string, std::map<std::string, Holders, std::less<>>, std::less<>> held_;
  uint64_t revision_ = 0;
  // The pods MarkPodChanged was given, by revision.
  ChangeLog changes_{kChangesKept};
};

}  // namespace devmgr::devicemanager
