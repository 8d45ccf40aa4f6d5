#include "devicemanager/pod.h"

namespace devmgr::devicemanager {

const Container* Pod::FindContainer(absl::string_view container_name) const {
  for (const auto* list : {&init_containers, &containers}) {
    for (const Container& container : *list) {
      if (container.name == container_name) return &container;
    }
  }
  return nullptr;
}

bool IsDraExtendedResource(const Pod& pod, absl::string_view container_name,
                           absl::string_view resource) {
  for (const DraResourceMapping& mapping : pod.dra_resource_mappings) {
    if (mapping.container_name == container_name && mapping.resource_name == resource) return true;
  }
  return false;
}

Container WithoutDraExtendedResources(const Pod& pod, const Container& container) {
  Container out = container;
  std::erase_if(out.devices, [&](const auto& entry) {
    return IsDraExtendedResource(pod, container.name, entry.first);
  });
  return out;
}

Pod WithoutDraExtendedResources(const Pod& pod) {
  Pod out = pod;
  for (auto* list : {&out.init_containers, &out.containers}) {
    for (Container& container : *list) container = WithoutDraExtendedResources(pod, container);
  }
  out.dra_resource_mappings.clear();
  return out;
}

}  // namespace devmgr::devicemanager
