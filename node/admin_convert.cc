#include "node/admin_convert.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"

namespace devmgr::node {
namespace {

namespace admin = devmgr::admin::v1;
using devicemanager::Container;
using devicemanager::ContainerType;

admin::Container::Type TypeToProto(ContainerType type) {
  switch (type) {
    case ContainerType::kInit:
      return admin::Container::INIT;
    case ContainerType::kSidecar:
      return admin::Container::SIDECAR;
    case ContainerType::kRegular:
      break;
  }
  return admin::Container::REGULAR;
}

void ContainerToProto(const Container& container, admin::Container& out) {
  out.set_name(container.name);
  out.set_type(TypeToProto(container.type));
  for (const auto& [resource, count] : container.devices)
    (*out.mutable_devices())[resource] = count;
}

absl::Status ContainersFromProto(
    const google::protobuf::RepeatedPtrField<admin::Container>& containers, bool init,
    std::set<std::string>& names, std::vector<Container>& out) {
  const char* field = init ? "pod.init_containers" : "pod.containers";
  for (int i = 0; i < containers.size(); ++i) {
    const admin::Container& in = containers[i];
    const std::string at = absl::StrCat(field, "[", i, "]");
    if (in.name().empty()) return absl::InvalidArgumentError(absl::StrCat(at, ".name: missing"));
    if (!names.insert(in.name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ".name: \"", in.name(), "\" is used by another container"));
    }
    Container container;
    container.name = in.name();
    switch (in.type()) {
      case admin::Container::INIT:
        container.type = ContainerType::kInit;
        break;
      case admin::Container::SIDECAR:
        container.type = ContainerType::kSidecar;
        break;
      default:
        container.type = ContainerType::kRegular;
        break;
    }
    if (init == (container.type == ContainerType::kRegular)) {
      return absl::InvalidArgumentError(absl::StrCat(
          at, ".type: ", init ? "init containers are INIT or SIDECAR" : "containers are REGULAR"));
    }
    for (const auto& [resource, count] : in.devices()) {
      if (count < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(at, ".devices[\"", resource, "\"]: negative count ", count));
      }
      container.devices[resource] = count;
    }
    out.push_back(std::move(container));
  }
  return absl::OkStatus();
}

void PairsToProto(const std::vector<std::pair<std::string, std::string>>& pairs,
                  google::protobuf::RepeatedPtrField<admin::KeyValue>& out) {
  for (const auto& [key, value] : pairs) {
    admin::KeyValue* pair = out.Add();
    pair->set_key(key);
    pair->set_value(value);
  }
}

}  // namespace

admin::Pod PodToProto(const devicemanager::Pod& pod) {
  admin::Pod out;
  out.set_uid(pod.uid);
  out.set_namespace_(pod.namespace_name);
  out.set_name(pod.name);
  for (const Container& container : pod.init_containers) {
    ContainerToProto(container, *out.add_init_containers());
  }
  for (const Container& container : pod.containers) {
    ContainerToProto(container, *out.add_containers());
  }
  return out;
}

absl::StatusOr<devicemanager::Pod> PodFromProto(const admin::Pod& pod) {
  if (pod.uid().empty()) return absl::InvalidArgumentError("pod.uid: missing");
  devicemanager::Pod out;
  out.uid = pod.uid();
  out.namespace_name = pod.namespace_();
  out.name = pod.name();
  std::set<std::string> names;
  if (absl::Status status =
          ContainersFromProto(pod.init_containers(), true, names, out.init_containers);
      !status.ok()) {
    return status;
  }
  if (absl::Status status = ContainersFromProto(pod.containers(), false, names, out.containers);
      !status.ok()) {
    return status;
  }
  return out;
}

admin::RunOptions RunOptionsToProto(const devicemanager::RunContainerOptions& options) {
  admin::RunOptions out;
  PairsToProto(options.envs, *out.mutable_envs());
  for (const auto& mount : options.mounts) {
    admin::Mount* m = out.add_mounts();
    m->set_container_path(mount.container_path);
    m->set_host_path(mount.host_path);
    m->set_read_only(mount.read_only);
  }
  for (const auto& device : options.devices) {
    admin::DeviceNode* d = out.add_devices();
    d->set_container_path(device.container_path);
    d->set_host_path(device.host_path);
    d->set_permissions(device.permissions);
  }
  PairsToProto(options.annotations, *out.mutable_annotations());
  for (const auto& name : options.cdi_devices) out.add_cdi_devices(name);
  return out;
}

void DevicesToProto(const devicemanager::ResourceDevices& devices,
                    const devicemanager::ContainerStatus& status, admin::ContainerDevices& out) {
  out.set_container_name(status.name);
  for (const auto& [resource, by_id] : devices) {
    admin::ResourceDevices* resource_devices = out.add_resources();
    resource_devices->set_resource_name(resource);
    const devicemanager::ResourceStatus* health = nullptr;
    for (const devicemanager::ResourceStatus& s : status.allocated_resources_status) {
      if (s.name == resource) health = &s;
    }
    // Both in ID order: one walk over the two.
    size_t next = 0;
    for (const auto& [id, device] : by_id) {
      admin::Device* d = resource_devices->add_devices();
      d->set_id(id);
      for (int64_t node : device.numa_nodes) d->add_numa_nodes(node);
      d->set_healthy(device.health == devicemanager::Health::kHealthy);
      if (health == nullptr) continue;
      while (next < health->resources.size() && health->resources[next].resource_id < id) ++next;
      if (next < health->resources.size() && health->resources[next].resource_id == id) {
        d->set_health(std::string(devicemanager::ResourceHealthName(health->resources[next].health)));
      }
    }
  }
}

}  // namespace devmgr::node
