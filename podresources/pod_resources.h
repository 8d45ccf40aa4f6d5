// Building the v1 messages from what the providers report: the per-(device, NUMA node) device
// entries, and one PodResources per pod with its listed containers. Shared by List, Get and
// Watch so that all three describe a pod identically; Watch adds the health of the devices.
#pragma once

#include "devmgr/podresources/v1/api.pb.h"
#include "podresources/providers.h"
#include "podresources/v1/api.pb.h"

namespace devmgr::podresources {

// AppendContainerDevices adds one ContainerDevices per (device, NUMA node) of `devices`, each
// with a single device ID and that node as its topology; a device without NUMA nodes gives one
// entry without topology. Order: resource name, then device ID, then the node order reported.
// Upstream: containerDevicesFromResourceDeviceInstances (cm/container_manager_linux.go).
void AppendContainerDevices(const ResourceDeviceInstances& devices,
                            google::protobuf::RepeatedPtrField<::v1::ContainerDevices>& out);

// ListedContainers: the containers PodResources reports for `pod`, in upstream's order: the
// restartable init containers, then the regular containers.
std::vector<const Container*> ListedContainers(const Pod& pod);

// FillPodResources writes `pod`'s name, namespace, pod-level CPUs and memory, and each listed
// container's devices, CPUs, memory and dynamic resources into `out`. Calls the providers;
// `providers.devices` must be set.
void FillPodResources(const Pod& pod, const Providers& providers, ::v1::PodResources& out);

// FillPodDevicesHealth writes the health of the devices each listed container of `pod` holds,
// from device plugins and through its claims, for the containers that hold some, in the order of
// FillPodResources. `providers.devices` must be set.
void FillPodDevicesHealth(const Pod& pod, const Providers& providers,
                          ::devmgr::podresources::v1::PodDevicesHealth& out);

}  // namespace devmgr::podresources
