// The narrow interfaces through which the PodResources service reads what the host knows: the
// pods, the devices the device manager assigned, and the CPUs, memory and dynamic resources of
// the host's other resource managers. The host implements them (for devices, a small adapter
// over devicemanager::Manager) and owns them; the service only reads. Upstream counterpart:
// pkg/kubelet/apis/podresources/types.go.
//
// Every method may be called concurrently from gRPC threads and from the Watch service's loop
// thread, so implementations must be thread-safe. They should return within microseconds to
// milliseconds: take a lock briefly, copy, return; never an RPC or file I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "podresources/v1/api.pb.h"

namespace devmgr::podresources {

// The parts of a Kubernetes container that PodResources reports.
struct Container {
  std::string name;
  // The container's restartPolicy, set only on init containers: "Always" marks a restartable
  // init container (a sidecar), which PodResources lists; other init containers are left out.
  std::string restart_policy;

  friend bool operator==(const Container&, const Container&) = default;
};

// The parts of a Kubernetes pod that PodResources reports.
struct Pod {
  std::string uid;
  std::string name;
  std::string namespace_name;
  std::vector<Container> init_containers;
  std::vector<Container> containers;

  friend bool operator==(const Pod&, const Pod&) = default;
};

// IsRestartableInitContainer: an init container with restartPolicy Always (upstream
// podutil.IsRestartableInitContainer).
inline bool IsRestartableInitContainer(const Container& init_container) {
  return init_container.restart_policy == "Always";
}

// The devices of one container (or of the node), per resource name, per device ID, with the
// NUMA nodes each device is attached to (empty: the plugin reported no topology). Ordered maps,
// so that responses are deterministic. Upstream: devicemanager.ResourceDeviceInstances.
using NumaNodes = std::vector<int64_t>;
using ResourceDeviceInstances = std::map<std::string, std::map<std::string, NumaNodes>>;
// Resource name -> device ID -> health, as Kubernetes spells it.
using DevicesHealth = std::map<std::string, std::map<std::string, std::string>>;

class PodsProvider {
 public:
  virtual ~PodsProvider() = default;
  // GetPods: every pod the host knows of, terminal ones included (v1alpha1 List).
  virtual std::vector<Pod> GetPods() = 0;
  // GetActivePods: the pods that are not terminal (v1 List, Watch).
  virtual std::vector<Pod> GetActivePods() = 0;
  // GetPodByName: the pod `name` in `namespace_name`, if the host knows it (v1 Get).
  virtual std::optional<Pod> GetPodByName(const std::string& namespace_name,
                                          const std::string& name) = 0;
  // ActivePodsRevision: a number that changes whenever GetActivePods's answer may change, or
  // nullopt (the default) when the provider cannot tell, and then no List answer is reused.
  virtual std::optional<uint64_t> ActivePodsRevision() { return std::nullopt; }
  // ActivePodsChangedSince: the UIDs of the pods that became active, stopped being active or
  // changed in GetActivePods's answer after `revision` (an ActivePodsRevision), or nullopt (the
  // default) when the provider cannot tell. With it, and GetActivePod, a List answer built
  // again after a few changes reads only the pods those changes name.
  virtual std::optional<std::vector<std::string>> ActivePodsChangedSince(uint64_t /*revision*/) {
    return std::nullopt;
  }
  // GetActivePod: the active pod `uid` as GetActivePods would describe it, nullopt if it is not
  // active. Read only where ActivePodsChangedSince tells changes.
  virtual std::optional<Pod> GetActivePod(const std::string& /*uid*/) { return std::nullopt; }
};

class DevicesProvider {
 public:
  virtual ~DevicesProvider() = default;
  // UpdateAllocatedDevices frees the devices of pods that are no longer active (the garbage
  // collection that upstream's List triggers). Called at the start of every List.
  virtual void UpdateAllocatedDevices() = 0;
  // GetDevices: the devices allocated to one container.
  virtual ResourceDeviceInstances GetDevices(const std::string& pod_uid,
                                             const std::string& container_name) = 0;
  // AllocationsRevision: a number that changes whenever GetDevices's answer for some container
  // may change, or nullopt (the default) when the provider cannot tell (see ActivePodsRevision).
  virtual std::optional<uint64_t> AllocationsRevision() { return std::nullopt; }
  // PodAllocationsRevision: the same for the containers of one pod; with it, a List answer
  // that must be built again reads only the pods whose revision changed.
  virtual std::optional<uint64_t> PodAllocationsRevision(const std::string& /*pod_uid*/) {
    return std::nullopt;
  }
  // PodsWithAllocationsChangedSince: the UIDs of the pods whose GetDevices answers may have
  // changed after `revision` (an AllocationsRevision), or nullopt (the default) when the
  // provider cannot tell (see ActivePodsChangedSince).
  virtual std::optional<std::vector<std::string>> PodsWithAllocationsChangedSince(
      uint64_t /*revision*/) {
    return std::nullopt;
  }
  // GetAllocatableDevices: every healthy device of every registered resource.
  virtual ResourceDeviceInstances GetAllocatableDevices() = 0;
  // AllocatableRevisions: for each resource of GetAllocatableDevices, a number that changes
  // whenever that resource's part may change, or nullopt (the default) when the provider cannot
  // tell, and then every GetAllocatableResources answer is built whole.
  virtual std::optional<std::map<std::string, uint64_t>> AllocatableRevisions() {
    return std::nullopt;
  }
  // GetAllocatableDevicesOf(resource_name): that resource's part of GetAllocatableDevices(), read
  // only where AllocatableRevisions tells revisions. The default reads every resource.
  virtual std::map<std::string, NumaNodes> GetAllocatableDevicesOf(
      const std::string& resource_name) {
    ResourceDeviceInstances all = GetAllocatableDevices();
    auto it = all.find(resource_name);
    return it == all.end() ? std::map<std::string, NumaNodes>{} : std::move(it->second);
  }
  // GetDevicesHealth: the health of the devices one container holds (Watch), by resource
  // name and device ID: "Healthy", "Unhealthy" or "Unknown". Empty (the default) from a
  // provider that does not know.
  virtual DevicesHealth GetDevicesHealth(const std::string& /*pod_uid*/,
                                         const std::string& /*container_name*/) {
    return {};
  }
};

// The CPU manager's view. Without one (Providers::cpus null) nothing is reported, as on a
// node with the "none" policy.
class CpusProvider {
 public:
  virtual ~CpusProvider() = default;
  // GetCpus: the exclusive CPUs of one container.
  virtual std::vector<int64_t> GetCpus(const Pod& pod, const Container& container) = 0;
  // GetPodCpus: the pod-level exclusive CPUs (pods with pod-level resources only).
  virtual std::vector<int64_t> GetPodCpus(const Pod& pod) = 0;
  // GetAllocatableCpus: the CPUs that can be allocated exclusively.
  virtual std::vector<int64_t> GetAllocatableCpus() = 0;
};

// The memory manager's view; without one nothing is reported.
class MemoryProvider {
 public:
  virtual ~MemoryProvider() = default;
  virtual std::vector<::v1::ContainerMemory> GetMemory(const Pod& pod,
                                                       const Container& container) = 0;
  virtual std::vector<::v1::ContainerMemory> GetPodMemory(const Pod& pod) = 0;
  virtual std::vector<::v1::ContainerMemory> GetAllocatableMemory() = 0;
};

// The DRA manager's view; without one nothing is reported.
class DynamicResourcesProvider {
 public:
  virtual ~DynamicResourcesProvider() = default;
  virtual std::vector<::v1::DynamicResource> GetDynamicResources(const Pod& pod,
                                                                 const Container& container) = 0;
  // Revision: a number that changes whenever GetDynamicResources's answer for some container may
  // change, or nullopt (the default) when the provider cannot tell, and then no List answer is
  // reused (see PodsProvider::ActivePodsRevision).
  virtual std::optional<uint64_t> Revision() { return std::nullopt; }
  // GetDynamicResourcesHealth: the health of the devices one container holds through its
  // claims (Watch), by allocatedResourcesStatus name ("claim:<pod claim>" or
  // "claim:<pod claim>/<request>") and resource ID. Empty (the default) from a provider that
  // does not know.
  virtual DevicesHealth GetDynamicResourcesHealth(const Pod& /*pod*/,
                                                  const Container& /*container*/) {
    return {};
  }
};

// Providers: what the service reads. Not owned; each must outlive the service. Null optional
// providers mean "this node reports none" (empty CPU, memory and dynamic resource lists).
struct Providers {
  PodsProvider* pods = nullptr;        // required
  DevicesProvider* devices = nullptr;  // required
  CpusProvider* cpus = nullptr;
  MemoryProvider* memory = nullptr;
  DynamicResourcesProvider* dynamic_resources = nullptr;
  // The kubelet's KubeletPodResourcesDynamicResources gate: false leaves the containers' dynamic
  // resources out of List and Get (and Watch's pods), while Watch still reports the health of
  // the devices they hold, which upstream's gate does not touch either.
  bool list_dynamic_resources = true;

  // ListedDynamicResources: the provider whose dynamic resources are listed, or null.
  DynamicResourcesProvider* ListedDynamicResources() const {
    return list_dynamic_resources ? dynamic_resources : nullptr;
  }
};

}  // namespace devmgr::podresources
