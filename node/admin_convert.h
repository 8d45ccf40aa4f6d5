// Conversions between devmgr's admin API messages (proto/devmgr/admin/v1) and the device
// manager's model, shared by the daemon's service and the `devmgr pods` client.
#pragma once

#include "absl/status/statusor.h"
#include "devicemanager/pod.h"
#include "devicemanager/pod_status.h"
#include "devicemanager/run_options.h"
#include "devicemanager/types.h"
#include "devmgr/admin/v1/api.pb.h"
#include "dra/claim.h"
#include "dra/claim_health.h"
#include "dra/manager.h"

namespace devmgr::node {

devmgr::admin::v1::Pod PodToProto(const devicemanager::Pod& pod);

// PodFromProto checks what the daemon relies on, naming the field: a UID, container names
// that are present and unique in the pod, init containers of type INIT or SIDECAR, app
// containers of type REGULAR, device counts that are not negative; and what the API server
// checks of a manifest's pod (pod_checks.h): a name and a namespace, where given, and container
// names the API server would take, device resources that are extended resources.
// InvalidArgument otherwise.
absl::StatusOr<devicemanager::Pod> PodFromProto(const devmgr::admin::v1::Pod& pod);

devmgr::admin::v1::RunOptions RunOptionsToProto(const devicemanager::RunContainerOptions& options);

// DevicesToProto: one container's devices, resources and IDs in name order, with the health
// `status` (that container's, filled by Manager::UpdateAllocatedResourcesStatus) reports.
void DevicesToProto(const devicemanager::ResourceDevices& devices,
                    const devicemanager::ContainerStatus& status,
                    devmgr::admin::v1::ContainerDevices& out);

// ClaimStatusesToProto appends a container's DRA allocatedResourcesStatus entries to `out`, one
// ResourceDevices per entry ("claim:<pod claim>[/<request>]") with each device (its CDI ID, or
// driver/pool/device) and its health.
void ClaimStatusesToProto(const std::vector<dra::ResourceStatus>& statuses,
                          devmgr::admin::v1::ContainerDevices& out);

// ClaimToProto: what drivers and clients read of a ResourceClaim.
devmgr::admin::v1::ResourceClaim ClaimToProto(const dra::ResourceClaim& claim);

// PreparedClaimToProto: a claim the DRA manager holds, its devices by driver name.
devmgr::admin::v1::PreparedClaim PreparedClaimToProto(const dra::ClaimSnapshot& claim);

}  // namespace devmgr::node
