#include "node/admin_service.h"

#include "common/status.h"
#include "node/admin_convert.h"
#include "node/pod_manifest.h"

namespace devmgr::node {

namespace admin = devmgr::admin::v1;

grpc::Status AdminService::AdmitPod(grpc::ServerContext* context,
                                    const admin::AdmitPodRequest* request,
                                    admin::AdmitPodResponse* response) {
  context->AddTrailingMetadata(kAdminAnsweredKey, "1");
  devicemanager::Pod pod;
  PodClaims claims;
  bool generated_uid = false;
  switch (request->source_case()) {
    case admin::AdmitPodRequest::kPod: {
      absl::StatusOr<devicemanager::Pod> parsed = PodFromProto(request->pod());
      if (!parsed.ok()) return ToGrpcStatus(parsed.status());
      pod = *std::move(parsed);
      break;
    }
    case admin::AdmitPodRequest::kManifest: {
      absl::StatusOr<PodManifest> manifest = ParsePodManifest(request->manifest(), features_);
      if (!manifest.ok()) return ToGrpcStatus(manifest.status());
      pod = std::move(manifest->pod);
      claims = std::move(manifest->claims);
      generated_uid = manifest->generated_uid;
      break;
    }
    default:
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "pod or manifest is required");
  }
  absl::StatusOr<std::vector<ContainerOptions>> admitted = admission_.Admit(pod, claims);
  if (!admitted.ok()) return ToGrpcStatus(admitted.status());
  response->set_pod_uid(pod.uid);
  response->set_generated_uid(generated_uid);
  for (const ContainerOptions& container : *admitted) {
    admin::ContainerRunOptions* out = response->add_containers();
    out->set_container_name(container.container_name);
    *out->mutable_options() = RunOptionsToProto(container.options);
  }
  for (std::string& resource : admission_.NonDevicePluginResources(pod)) {
    response->add_non_device_plugin_resources(std::move(resource));
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::RemovePod(grpc::ServerContext* context,
                                     const admin::RemovePodRequest* request,
                                     admin::RemovePodResponse* response) {
  context->AddTrailingMetadata(kAdminAnsweredKey, "1");
  if (request->pod_uid().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "pod_uid is required");
  }
  if (absl::Status removed = admission_.Remove(request->pod_uid()); !removed.ok()) {
    return ToGrpcStatus(removed);
  }
  response->set_pod_uid(request->pod_uid());
  return grpc::Status::OK;
}

grpc::Status AdminService::ListPods(grpc::ServerContext* context, const admin::ListPodsRequest*,
                                    admin::ListPodsResponse* response) {
  context->AddTrailingMetadata(kAdminAnsweredKey, "1");
  for (const RegisteredPod& registered : registry_.List()) {
    admin::PodStatus* status = response->add_pods();
    *status->mutable_pod() = PodToProto(registered.pod);
    status->set_recovered(registered.recovered);
    devicemanager::PodStatus health;
    for (const auto* list : {&registered.pod.init_containers, &registered.pod.containers}) {
      for (const devicemanager::Container& container : *list) {
        health.container_statuses.push_back({container.name, {}});
      }
    }
    manager_.UpdateAllocatedResourcesStatus(registered.pod.uid, health);
    for (const devicemanager::ContainerStatus& container : health.container_statuses) {
      admin::ContainerDevices* devices = status->add_containers();
      DevicesToProto(manager_.GetDevices(registered.pod.uid, container.name), container, *devices);
      AddClaimStatuses(registered.pod.uid, container.name, *devices);
    }
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::GetRunOptions(grpc::ServerContext* context,
                                         const admin::GetRunOptionsRequest* request,
                                         admin::GetRunOptionsResponse* response) {
  context->AddTrailingMetadata(kAdminAnsweredKey, "1");
  absl::StatusOr<devicemanager::RunContainerOptions> options =
      admission_.RunOptions(request->pod_uid(), request->container_name());
  if (!options.ok()) return ToGrpcStatus(options.status());
  *response->mutable_options() = RunOptionsToProto(*options);
  devicemanager::PodStatus health;
  health.container_statuses.push_back({request->container_name(), {}});
  manager_.UpdateAllocatedResourcesStatus(request->pod_uid(), health);
  DevicesToProto(manager_.GetDevices(request->pod_uid(), request->container_name()),
                 health.container_statuses[0], *response->mutable_devices());
  AddClaimStatuses(request->pod_uid(), request->container_name(), *response->mutable_devices());
  return grpc::Status::OK;
}

void AdminService::AddClaimStatuses(const std::string& pod_uid, const std::string& container,
                                    admin::ContainerDevices& out) const {
  if (claims_ == nullptr || dra_ == nullptr) return;
  const std::optional<dra::Pod> pod = claims_->FindPod(pod_uid);
  if (!pod.has_value()) return;
  for (const auto* list : {&pod->init_containers, &pod->containers}) {
    for (const dra::Container& uses : *list) {
      if (uses.name == container) {
        ClaimStatusesToProto(dra_->ContainerResourceStatuses(*pod, uses), out);
      }
    }
  }
}

grpc::Status AdminService::GetResourceClaim(grpc::ServerContext* context,
                                            const admin::GetResourceClaimRequest* request,
                                            admin::GetResourceClaimResponse* response) {
  context->AddTrailingMetadata(kAdminAnsweredKey, "1");
  if (request->name().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "name is required");
  }
  const std::string namespace_name =
      request->namespace_().empty() ? "default" : request->namespace_();
  if (claims_ == nullptr) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "this node serves no ResourceClaims");
  }
  absl::StatusOr<dra::ResourceClaim> claim = claims_->GetClaim(namespace_name, request->name());
  if (!claim.ok()) return ToGrpcStatus(claim.status());
  *response->mutable_claim() = ClaimToProto(*claim);
  return grpc::Status::OK;
}

grpc::Status AdminService::ListClaims(grpc::ServerContext* context, const admin::ListClaimsRequest*,
                                      admin::ListClaimsResponse* response) {
  context->AddTrailingMetadata(kAdminAnsweredKey, "1");
  if (dra_ == nullptr) return grpc::Status::OK;
  for (const dra::ClaimSnapshot& claim : dra_->Claims()) {
    *response->add_claims() = PreparedClaimToProto(claim);
  }
  return grpc::Status::OK;
}

}  // namespace devmgr::node
