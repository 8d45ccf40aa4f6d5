#include "kubeletplugin/admin_claim_lookup.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/channel_reconnect.h"
#include "common/plugin_channel.h"
#include "common/status.h"
#include "devmgr/admin/v1/api.grpc.pb.h"

namespace devmgr::kubeletplugin {

namespace admin = devmgr::admin::v1;

dra::ResourceClaim ClaimFromProto(const admin::ResourceClaim& claim) {
  dra::ResourceClaim out;
  out.namespace_name = claim.namespace_();
  out.name = claim.name();
  out.uid = claim.uid();
  if (claim.has_pod_claim_name()) out.pod_claim_name = claim.pod_claim_name();
  if (claim.allocated()) {
    std::vector<dra::DeviceRequestAllocationResult>& results = out.allocation.emplace();
    for (const admin::DeviceAllocationResult& result : claim.results()) {
      dra::DeviceRequestAllocationResult& entry = results.emplace_back();
      entry.request = result.request();
      entry.driver = result.driver();
      entry.pool = result.pool();
      entry.device = result.device();
      if (!result.share_id().empty()) entry.share_id = result.share_id();
      entry.admin_access = result.admin_access();
      entry.consumed_capacity.insert(result.consumed_capacity().begin(),
                                     result.consumed_capacity().end());
      entry.skip_node_operations.assign(result.skip_node_operations().begin(),
                                        result.skip_node_operations().end());
    }
    for (const admin::DeviceAllocationConfiguration& config : claim.config()) {
      out.allocation_config.push_back(
          {.source = config.source(),
           .requests = std::vector<std::string>(config.requests().begin(), config.requests().end()),
           .driver = config.driver(),
           .parameters = config.parameters_json()});
    }
  }
  for (const std::string& pod_uid : claim.reserved_for_pod_uids()) {
    out.reserved_for.push_back({.api_group = "", .resource = "pods", .name = "", .uid = pod_uid});
  }
  return out;
}

ClaimLookup AdminClaimLookup(const std::filesystem::path& admin_socket, absl::Duration timeout) {
  std::shared_ptr<grpc::Channel> channel = PluginChannel(admin_socket);
  return [channel = std::move(channel), admin_socket, timeout](
             const std::string& namespace_name,
             const std::string& name) -> absl::StatusOr<dra::ResourceClaim> {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    ReconnectIfServed(*channel, admin_socket, context);
    // A stub is only a view of the channel: cheap enough to make per call.
    std::unique_ptr<admin::Admin::Stub> stub = admin::Admin::NewStub(channel);
    admin::GetResourceClaimRequest request;
    request.set_namespace_(namespace_name);
    request.set_name(name);
    admin::GetResourceClaimResponse response;
    grpc::Status status = stub->GetResourceClaim(&context, request, &response);
    if (!status.ok()) return FromGrpcStatus(status);
    return ClaimFromProto(response.claim());
  };
}

}  // namespace devmgr::kubeletplugin
