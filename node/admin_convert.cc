#include "node/admin_convert.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/k8s_names.h"
#include "node/pod_checks.h"

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
    if (absl::Status valid = CheckLabelName(absl::StrCat(at, ".name"), in.name()); !valid.ok()) {
      return valid;
    }
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
      case admin::Container::REGULAR:
        container.type = ContainerType::kRegular;
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat(at, ".type: unknown type ", static_cast<int>(in.type())));
    }
    if (init == (container.type == ContainerType::kRegular)) {
      return absl::InvalidArgumentError(absl::StrCat(
          at, ".type: ", init ? "init containers are INIT or SIDECAR" : "containers are REGULAR"));
    }
    for (const auto& [resource, count] : in.devices()) {
      const std::string where = absl::StrCat(at, ".devices[\"", resource, "\"]");
      // Devices are an extended resource's: cpu and memory are not the device manager's.
      std::string error = ResourceNameError(resource);
      if (error.empty() && !IsExtendedResourceName(resource)) error = "not an extended resource";
      if (!error.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": Invalid value: \"", resource, "\": ", error));
      }
      if (count < 0) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": negative count ", count));
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
  // An empty name or namespace is taken as it has been; one given must be the API server's.
  if (!pod.name().empty()) {
    if (absl::Status valid = CheckPodName("pod.name", pod.name()); !valid.ok()) return valid;
  }
  if (!pod.namespace_().empty()) {
    if (absl::Status valid = CheckLabelName("pod.namespace", pod.namespace_()); !valid.ok()) {
      return valid;
    }
  }
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
        d->set_health(
            std::string(devicemanager::ResourceHealthName(health->resources[next].health)));
      }
    }
  }
}

void ClaimStatusesToProto(const std::vector<dra::ResourceStatus>& statuses,
                          admin::ContainerDevices& out) {
  for (const dra::ResourceStatus& status : statuses) {
    admin::ResourceDevices* resource = out.add_resources();
    resource->set_resource_name(status.name);
    for (const dra::ResourceHealth& device : status.resources) {
      admin::Device* d = resource->add_devices();
      d->set_id(device.resource_id);
      d->set_healthy(device.health == dra::ResourceHealthStatus::kHealthy);
      d->set_health(std::string(dra::ResourceHealthStatusName(device.health)));
    }
  }
}

admin::ResourceClaim ClaimToProto(const dra::ResourceClaim& claim) {
  admin::ResourceClaim out;
  out.set_namespace_(claim.namespace_name);
  out.set_name(claim.name);
  out.set_uid(claim.uid);
  if (claim.pod_claim_name.has_value()) out.set_pod_claim_name(*claim.pod_claim_name);
  out.set_allocated(claim.allocation.has_value());
  for (const dra::DeviceRequestAllocationResult& result :
       claim.allocation.value_or(std::vector<dra::DeviceRequestAllocationResult>{})) {
    admin::DeviceAllocationResult* item = out.add_results();
    item->set_request(result.request);
    item->set_driver(result.driver);
    item->set_pool(result.pool);
    item->set_device(result.device);
    item->set_share_id(result.share_id.value_or(""));
    item->set_admin_access(result.admin_access);
    item->mutable_consumed_capacity()->insert(result.consumed_capacity.begin(),
                                              result.consumed_capacity.end());
    item->mutable_skip_node_operations()->Add(result.skip_node_operations.begin(),
                                              result.skip_node_operations.end());
  }
  for (const dra::DeviceAllocationConfiguration& config : claim.allocation_config) {
    admin::DeviceAllocationConfiguration* item = out.add_config();
    item->set_source(config.source);
    for (const std::string& request : config.requests) item->add_requests(request);
    item->set_driver(config.driver);
    item->set_parameters_json(config.parameters);
  }
  for (const dra::ResourceClaimConsumerReference& consumer : claim.reserved_for) {
    if (consumer.resource == "pods") out.add_reserved_for_pod_uids(consumer.uid);
  }
  return out;
}

admin::PreparedClaim PreparedClaimToProto(const dra::ClaimSnapshot& claim) {
  const dra::ClaimInfoState& state = claim.state;
  admin::PreparedClaim out;
  out.set_namespace_(state.namespace_name);
  out.set_name(state.claim_name);
  out.set_uid(state.claim_uid);
  for (const std::string& uid : state.pod_uids.value_or(std::set<std::string>{})) {
    out.add_pod_uids(uid);
  }
  out.set_prepared(claim.prepared);
  for (const auto& [driver, driver_state] :
       state.driver_state.value_or(std::map<std::string, dra::DriverState>{})) {
    for (const dra::CheckpointDevice& device :
         driver_state.devices.value_or(std::vector<dra::CheckpointDevice>{})) {
      admin::PreparedDevice* item = out.add_devices();
      item->set_driver(driver);
      item->set_pool(device.pool_name);
      item->set_device(device.device_name);
      item->set_share_id(device.share_id.value_or(""));
      for (const std::string& request :
           device.request_names.value_or(dra::GoStrings::value_type{})) {
        item->add_request_names(request);
      }
      for (const std::string& cdi : device.cdi_device_ids.value_or(dra::GoStrings::value_type{})) {
        item->add_cdi_device_ids(cdi);
      }
    }
  }
  return out;
}

}  // namespace devmgr::node
