// AdminService: devmgr's admin API (proto/devmgr/admin/v1) served by the daemon on
// <root>/devmgr.sock. A thin translation between the wire and PodAdmission / PodRegistry;
// manifests are parsed here, so that agents in any language can send what kubectl prints.
#pragma once

#include "devicemanager/manager.h"
#include "devmgr/admin/v1/api.grpc.pb.h"
#include "dra/manager.h"
#include "node/claim_store.h"
#include "node/pod_admission.h"
#include "node/pod_registry.h"
#include "structured/feature_gates.h"

namespace devmgr::node {

// The largest admin request the daemon reads: gRPC's default, said once for the server and for
// clients that check a manifest before they send it.
inline constexpr int kMaxAdminRequestBytes = 4 << 20;

// The trailing metadata key every admin answer carries, refusals included: a call that fails
// UNAVAILABLE or CANCELLED without it was not answered by the daemon (one that went down during
// the call), so that a client does not read the transport's error as the daemon's refusal.
inline constexpr char kAdminAnsweredKey[] = "devmgr-answered";

class AdminService final : public devmgr::admin::v1::Admin::Service {
 public:
  // Not owned; all must outlive the service. `claims` and `dra` are null on a node without
  // DRA (then GetResourceClaim answers NOT_FOUND and ListClaims nothing). A manifest's claims
  // are read with the node's DRA `features` (ParsePodManifest).
  AdminService(PodAdmission& admission, PodRegistry& registry,
               const devicemanager::Manager& manager, const structured::Features& features,
               ClaimStore* claims = nullptr, const dra::Manager* dra = nullptr)
      : admission_(admission),
        registry_(registry),
        manager_(manager),
        features_(features),
        claims_(claims),
        dra_(dra) {}

  grpc::Status AdmitPod(grpc::ServerContext* context,
                        const devmgr::admin::v1::AdmitPodRequest* request,
                        devmgr::admin::v1::AdmitPodResponse* response) override;
  grpc::Status RemovePod(grpc::ServerContext* context,
                         const devmgr::admin::v1::RemovePodRequest* request,
                         devmgr::admin::v1::RemovePodResponse* response) override;
  grpc::Status ListPods(grpc::ServerContext* context,
                        const devmgr::admin::v1::ListPodsRequest* request,
                        devmgr::admin::v1::ListPodsResponse* response) override;
  grpc::Status GetRunOptions(grpc::ServerContext* context,
                             const devmgr::admin::v1::GetRunOptionsRequest* request,
                             devmgr::admin::v1::GetRunOptionsResponse* response) override;
  grpc::Status GetResourceClaim(grpc::ServerContext* context,
                                const devmgr::admin::v1::GetResourceClaimRequest* request,
                                devmgr::admin::v1::GetResourceClaimResponse* response) override;
  grpc::Status ListClaims(grpc::ServerContext* context,
                          const devmgr::admin::v1::ListClaimsRequest* request,
                          devmgr::admin::v1::ListClaimsResponse* response) override;

 private:
  // AddClaimStatuses appends the DRA entries of one container's allocatedResourcesStatus.
  void AddClaimStatuses(const std::string& pod_uid, const std::string& container,
                        devmgr::admin::v1::ContainerDevices& out) const;

  PodAdmission& admission_;
  PodRegistry& registry_;
  const devicemanager::Manager& manager_;
  const structured::Features features_;
  ClaimStore* const claims_;
  const dra::Manager* const dra_;
};

}  // namespace devmgr::node
