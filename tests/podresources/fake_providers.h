// Fake providers for the PodResources tests: plain in-memory maps behind one mutex, set by the
// test and read by the service (from gRPC threads and the Watch hub's thread). Upstream's tests
// use mockery mocks of the same interfaces (pkg/kubelet/apis/podresources/testing).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/change_log.h"
#include "podresources/providers.h"

namespace devmgr::podresources::testing {

// Both fakes report a revision that every setter changes, as a host that can tell would.
class FakePodsProvider final : public PodsProvider {
 public:
  // SetPods sets every pod the host knows; `active` are their UIDs that are not terminal
  // (all of them if not given).
  void SetPods(std::vector<Pod> pods, std::optional<std::vector<std::string>> active = {}) {
    absl::MutexLock lock(&mu_);
    ++revision_;
    changes_.Reset(revision_);
    pods_ = std::move(pods);
    active_.clear();
    for (const Pod& pod : pods_) active_.push_back(pod.uid);
    if (active.has_value()) active_ = *std::move(active);
  }
  void Upsert(const Pod& pod) {
    absl::MutexLock lock(&mu_);
    ++revision_;
    changes_.Record(revision_, pod.uid);
    for (Pod& existing : pods_) {
      if (existing.uid == pod.uid) {
        existing = pod;
        return;
      }
    }
    pods_.push_back(pod);
    active_.push_back(pod.uid);
  }
  void Remove(const std::string& uid) {
    absl::MutexLock lock(&mu_);
    ++revision_;
    changes_.Record(revision_, uid);
    std::erase_if(pods_, [&](const Pod& pod) { return pod.uid == uid; });
    std::erase(active_, uid);
  }

  std::vector<Pod> GetPods() override {
    absl::MutexLock lock(&mu_);
    return pods_;
  }
  // On: ActivePodsChangedSince tells the pods each change was about (off, the interface's
  // default: it cannot tell).
  void ReportChanges(bool report) { report_changes_.store(report); }
  int active_pods_calls() const { return active_pods_calls_.load(); }

  std::vector<Pod> GetActivePods() override {
    active_pods_calls_.fetch_add(1);
    absl::MutexLock lock(&mu_);
    std::vector<Pod> active;
    for (const Pod& pod : pods_) {
      if (std::find(active_.begin(), active_.end(), pod.uid) != active_.end()) {
        active.push_back(pod);
      }
    }
    return active;
  }
  std::optional<Pod> GetPodByName(const std::string& namespace_name,
                                  const std::string& name) override {
    absl::MutexLock lock(&mu_);
    for (const Pod& pod : pods_) {
      if (pod.namespace_name == namespace_name && pod.name == name) return pod;
    }
    return std::nullopt;
  }
  std::optional<uint64_t> ActivePodsRevision() override {
    absl::MutexLock lock(&mu_);
    return revision_;
  }
  std::optional<std::vector<std::string>> ActivePodsChangedSince(uint64_t revision) override {
    if (!report_changes_.load()) return std::nullopt;
    absl::MutexLock lock(&mu_);
    return changes_.Since(revision);
  }
  std::optional<Pod> GetActivePod(const std::string& uid) override {
    absl::MutexLock lock(&mu_);
    if (std::find(active_.begin(), active_.end(), uid) == active_.end()) return std::nullopt;
    for (const Pod& pod : pods_) {
      if (pod.uid == uid) return pod;
    }
    return std::nullopt;
  }

 private:
  std::atomic<bool> report_changes_{false};
  std::atomic<int> active_pods_calls_{0};
  absl::Mutex mu_;
  ChangeLog changes_ ABSL_GUARDED_BY(mu_){64};
  std::vector<Pod> pods_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> active_ ABSL_GUARDED_BY(mu_);
  uint64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
};

class FakeDevicesProvider final : public DevicesProvider {
 public:
  void SetDevices(const std::string& pod_uid, const std::string& container,
                  ResourceDeviceInstances devices) {
    absl::MutexLock lock(&mu_);
    pod_revisions_[pod_uid] = ++revision_;
    changes_.Record(revision_, pod_uid);
    devices_[{pod_uid, container}] = std::move(devices);
  }
  void SetHealth(const std::string& pod_uid, const std::string& container, DevicesHealth health) {
    absl::MutexLock lock(&mu_);
    health_[{pod_uid, container}] = std::move(health);
  }
  // As the device manager: a resource whose devices change gets a new revision.
  void SetAllocatable(ResourceDeviceInstances devices) {
    absl::MutexLock lock(&mu_);
    std::map<std::string, uint64_t> revisions;
    for (const auto& [resource, ids] : devices) {
      auto before = allocatable_.find(resource);
      auto kept = allocatable_revisions_.find(resource);
      const bool same = before != allocatable_.end() && before->second == ids &&
                        kept != allocatable_revisions_.end();
      revisions.emplace(resource, same ? kept->second : ++revision_);
    }
    allocatable_revisions_ = std::move(revisions);
    allocatable_ = std::move(devices);
  }
  // Off: AllocatableRevisions reports none (the interface's default).
  void ReportAllocatableRevisions(bool report) { report_allocatable_revisions_.store(report); }
  int update_calls() const { return update_calls_.load(); }
  int get_devices_calls() const { return get_devices_calls_.load(); }
  // Reads of one resource's allocatable devices.
  int resource_allocatable_calls() const { return resource_allocatable_calls_.load(); }

  void UpdateAllocatedDevices() override { update_calls_.fetch_add(1); }
  ResourceDeviceInstances GetDevices(const std::string& pod_uid,
                                     const std::string& container_name) override {
    get_devices_calls_.fetch_add(1);
    absl::MutexLock lock(&mu_);
    auto it = devices_.find({pod_uid, container_name});
    return it == devices_.end() ? ResourceDeviceInstances{} : it->second;
  }
  ResourceDeviceInstances GetAllocatableDevices() override {
    absl::MutexLock lock(&mu_);
    return allocatable_;
  }
  std::optional<std::map<std::string, uint64_t>> AllocatableRevisions() override {
    if (!report_allocatable_revisions_.load()) return std::nullopt;
    absl::MutexLock lock(&mu_);
    return allocatable_revisions_;
  }
  std::map<std::string, NumaNodes> GetAllocatableDevicesOf(const std::string& resource) override {
    resource_allocatable_calls_.fetch_add(1);
    absl::MutexLock lock(&mu_);
    auto it = allocatable_.find(resource);
    return it == allocatable_.end() ? std::map<std::string, NumaNodes>{} : it->second;
  }
  DevicesHealth GetDevicesHealth(const std::string& pod_uid,
                                 const std::string& container_name) override {
    absl::MutexLock lock(&mu_);
    auto it = health_.find({pod_uid, container_name});
    return it == health_.end() ? DevicesHealth{} : it->second;
  }
  std::optional<uint64_t> AllocationsRevision() override {
    absl::MutexLock lock(&mu_);
    return revision_;
  }
  std::optional<uint64_t> PodAllocationsRevision(const std::string& pod_uid) override {
    absl::MutexLock lock(&mu_);
    auto it = pod_revisions_.find(pod_uid);
    return it == pod_revisions_.end() ? 0 : it->second;
  }
  // On: PodsWithAllocationsChangedSince tells the pods each change was about.
  void ReportChanges(bool report) { report_changes_.store(report); }
  std::optional<std::vector<std::string>> PodsWithAllocationsChangedSince(
      uint64_t revision) override {
    if (!report_changes_.load()) return std::nullopt;
    absl::MutexLock lock(&mu_);
    return changes_.Since(revision);
  }

 private:
  std::atomic<bool> report_changes_{false};
  ChangeLog changes_ ABSL_GUARDED_BY(mu_){64};
  std::atomic<int> update_calls_{0};
  std::atomic<int> get_devices_calls_{0};
  std::atomic<int> resource_allocatable_calls_{0};
  std::atomic<bool> report_allocatable_revisions_{true};
  absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, ResourceDeviceInstances> devices_
      ABSL_GUARDED_BY(mu_);
  ResourceDeviceInstances allocatable_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> allocatable_revisions_ ABSL_GUARDED_BY(mu_);
  uint64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, uint64_t> pod_revisions_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<std::string, std::string>, DevicesHealth> health_ ABSL_GUARDED_BY(mu_);
};

class FakeCpusProvider final : public CpusProvider {
 public:
  void SetCpus(const std::string& pod_uid, const std::string& container,
               std::vector<int64_t> cpus) {
    absl::MutexLock lock(&mu_);
    cpus_[{pod_uid, container}] = std::move(cpus);
  }
  void SetPodCpus(const std::string& pod_uid, std::vector<int64_t> cpus) {
    absl::MutexLock lock(&mu_);
    pod_cpus_[pod_uid] = std::move(cpus);
  }
  void SetAllocatable(std::vector<int64_t> cpus) {
    absl::MutexLock lock(&mu_);
    allocatable_ = std::move(cpus);
  }

  std::vector<int64_t> GetCpus(const Pod& pod, const Container& container) override {
    absl::MutexLock lock(&mu_);
    auto it = cpus_.find({pod.uid, container.name});
    return it == cpus_.end() ? std::vector<int64_t>{} : it->second;
  }
  std::vector<int64_t> GetPodCpus(const Pod& pod) override {
    absl::MutexLock lock(&mu_);
    auto it = pod_cpus_.find(pod.uid);
    return it == pod_cpus_.end() ? std::vector<int64_t>{} : it->second;
  }
  std::vector<int64_t> GetAllocatableCpus() override {
    absl::MutexLock lock(&mu_);
    return allocatable_;
  }

 private:
  absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, std::vector<int64_t>> cpus_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<int64_t>> pod_cpus_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> allocatable_ ABSL_GUARDED_BY(mu_);
};

class FakeMemoryProvider final : public MemoryProvider {
 public:
  void SetMemory(const std::string& pod_uid, const std::string& container,
                 std::vector<::v1::ContainerMemory> memory) {
    absl::MutexLock lock(&mu_);
    memory_[{pod_uid, container}] = std::move(memory);
  }
  void SetPodMemory(const std::string& pod_uid, std::vector<::v1::ContainerMemory> memory) {
    absl::MutexLock lock(&mu_);
    pod_memory_[pod_uid] = std::move(memory);
  }
  void SetAllocatable(std::vector<::v1::ContainerMemory> memory) {
    absl::MutexLock lock(&mu_);
    allocatable_ = std::move(memory);
  }

  std::vector<::v1::ContainerMemory> GetMemory(const Pod& pod,
                                               const Container& container) override {
    absl::MutexLock lock(&mu_);
    auto it = memory_.find({pod.uid, container.name});
    return it == memory_.end() ? std::vector<::v1::ContainerMemory>{} : it->second;
  }
  std::vector<::v1::ContainerMemory> GetPodMemory(const Pod& pod) override {
    absl::MutexLock lock(&mu_);
    auto it = pod_memory_.find(pod.uid);
    return it == pod_memory_.end() ? std::vector<::v1::ContainerMemory>{} : it->second;
  }
  std::vector<::v1::ContainerMemory> GetAllocatableMemory() override {
    absl::MutexLock lock(&mu_);
    return allocatable_;
  }

 private:
  absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, std::vector<::v1::ContainerMemory>> memory_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<::v1::ContainerMemory>> pod_memory_ ABSL_GUARDED_BY(mu_);
  std::vector<::v1::ContainerMemory> allocatable_ ABSL_GUARDED_BY(mu_);
};

class FakeDynamicResourcesProvider final : public DynamicResourcesProvider {
 public:
  void SetDynamicResources(const std::string& pod_uid, const std::string& container,
                           std::vector<::v1::DynamicResource> resources) {
    absl::MutexLock lock(&mu_);
    resources_[{pod_uid, container}] = std::move(resources);
    ++revision_;
  }
  // On: Revision tells a revision (off, the interface's default: it cannot tell).
  void ReportRevision(bool report) { report_revision_.store(report); }
  int calls() const { return calls_.load(); }

  std::vector<::v1::DynamicResource> GetDynamicResources(const Pod& pod,
                                                         const Container& container) override {
    calls_.fetch_add(1);
    absl::MutexLock lock(&mu_);
    auto it = resources_.find({pod.uid, container.name});
    return it == resources_.end() ? std::vector<::v1::DynamicResource>{} : it->second;
  }
  std::optional<uint64_t> Revision() override {
    if (!report_revision_.load()) return std::nullopt;
    absl::MutexLock lock(&mu_);
    return revision_;
  }

 private:
  std::atomic<bool> report_revision_{false};
  std::atomic<int> calls_{0};
  absl::Mutex mu_;
  uint64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::pair<std::string, std::string>, std::vector<::v1::DynamicResource>> resources_
      ABSL_GUARDED_BY(mu_);
};

// FakeNode bundles one of each fake, wired as Providers.
struct FakeNode {
  FakePodsProvider pods;
  FakeDevicesProvider devices;
  FakeCpusProvider cpus;
  FakeMemoryProvider memory;
  FakeDynamicResourcesProvider dynamic_resources;

  Providers providers() { return Providers{&pods, &devices, &cpus, &memory, &dynamic_resources}; }
  // A node with a device manager and no other resource managers.
  Providers pods_and_devices() { return Providers{&pods, &devices}; }
  // A node with a device manager and a DRA manager, as `devmgr serve`.
  Providers pods_devices_and_claims() {
    return Providers{&pods, &devices, nullptr, nullptr, &dynamic_resources};
  }
};

}  // namespace devmgr::podresources::testing
