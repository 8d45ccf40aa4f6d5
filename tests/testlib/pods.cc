#include "tests/testlib/pods.h"

#include <utility>

namespace devmgr::testing {

devicemanager::Container MakeContainer(std::string name, std::map<std::string, int64_t> devices,
                                       devicemanager::ContainerType type) {
  return devicemanager::Container{std::move(name), type, std::move(devices)};
}

devicemanager::Pod MakePod(std::string uid, std::vector<devicemanager::Container> containers,
                           std::vector<devicemanager::Container> init_containers) {
  std::string name = "pod-" + uid;
  return devicemanager::Pod{std::move(uid), "default", std::move(name), std::move(init_containers),
                            std::move(containers)};
}

}  // namespace devmgr::testing
