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

}  // namespace devmgr::devicemanager
