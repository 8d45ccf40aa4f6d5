#include "podresources/pod_resources.h"

namespace devmgr::podresources {

void AppendContainerDevices(const ResourceDeviceInstances& devices,
                            google::protobuf::RepeatedPtrField<::v1::ContainerDevices>& out) {
  for (const auto& [resource_name, instances] : devices) {
    for (const auto& [device_id, numa_nodes] : instances) {
      if (numa_nodes.empty()) {
        ::v1::ContainerDevices* entry = out.Add();
        entry->set_resource_name(resource_name);
        entry->add_device_ids(device_id);
        continue;
      }
      for (const int64_t node : numa_nodes) {
        ::v1::ContainerDevices* entry = out.Add();
        entry->set_resource_name(resource_name);
        entry->add_device_ids(device_id);
        entry->mutable_topology()->add_nodes()->set_id(node);
      }
    }
  }
}

std::vector<const Container*> ListedContainers(const Pod& pod) {
  std::vector<const Container*> listed;
  listed.reserve(pod.init_containers.size() + pod.containers.size());
  for (const Container& init_container : pod.init_containers) {
    if (IsRestartableInitContainer(init_container)) listed.push_back(&init_container);
  }
  for (const Container& container : pod.containers) listed.push_back(&container);
  return listed;
}

void FillPodResources(const Pod& pod, const Providers& providers, ::v1::PodResources& out) {
  out.set_name(pod.name);
  out.set_namespace_(pod.namespace_name);
  if (providers.cpus != nullptr) {
    for (const int64_t cpu : providers.cpus->GetPodCpus(pod)) out.add_cpu_ids(cpu);
  }
  if (providers.memory != nullptr) {
    for (auto& memory : providers.memory->GetPodMemory(pod)) *out.add_memory() = std::move(memory);
  }
  for (const Container* container : ListedContainers(pod)) {
    ::v1::ContainerResources* resources = out.add_containers();
    resources->set_name(container->name);
    AppendContainerDevices(providers.devices->GetDevices(pod.uid, container->name),
                           *resources->mutable_devices());
    if (providers.cpus != nullptr) {
      for (const int64_t cpu : providers.cpus->GetCpus(pod, *container)) {
        resources->add_cpu_ids(cpu);
      }
    }
    if (providers.memory != nullptr) {
      for (auto& memory : providers.memory->GetMemory(pod, *container)) {
        *resources->add_memory() = std::move(memory);
      }
    }
    if (DynamicResourcesProvider* listed = providers.ListedDynamicResources(); listed != nullptr) {
      for (auto& resource : listed->GetDynamicResources(pod, *container)) {
        *resources->add_dynamic_resources() = std::move(resource);
      }
    }
  }
}

void FillPodDevicesHealth(const Pod& pod, const Providers& providers,
                          ::devmgr::podresources::v1::PodDevicesHealth& out) {
  for (const Container* container : ListedContainers(pod)) {
    DevicesHealth health = providers.devices->GetDevicesHealth(pod.uid, container->name);
    if (providers.dynamic_resources != nullptr) {
      health.merge(providers.dynamic_resources->GetDynamicResourcesHealth(pod, *container));
    }
    if (health.empty()) continue;
    auto* container_health = out.add_containers();
    container_health->set_name(container->name);
    for (const auto& [resource_name, by_id] : health) {
      auto* status = container_health->add_allocated_resources_status();
      status->set_name(resource_name);
      for (const auto& [device_id, device_health] : by_id) {
        auto* device = status->add_resources();
        device->set_resource_id(device_id);
        device->set_health(device_health);
      }
    }
  }
}

}  // namespace devmgr::podresources
