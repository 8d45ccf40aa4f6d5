// Pods for tests and benchmarks of the device manager: MakeContainer and MakePod build the
// devicemanager::Pod that an admission sees, with each container's device counts, so that a
// test states only what it is about.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "devicemanager/pod.h"

namespace devmgr::testing {

// MakeContainer is container `name` asking for `devices` (extended resource name -> count).
// Init containers are kInit or kSidecar.
devicemanager::Container MakeContainer(
    std::string name, std::map<std::string, int64_t> devices = {},
    devicemanager::ContainerType type = devicemanager::ContainerType::kRegular);

// MakePod is pod `uid` in namespace "default", named "pod-<uid>", with `containers` as its app
// containers and `init_containers` before them. A test that needs another name or namespace
// sets it on the result.
devicemanager::Pod MakePod(std::string uid, std::vector<devicemanager::Container> containers,
                           std::vector<devicemanager::Container> init_containers = {});

}  // namespace devmgr::testing
