// The v1alpha1.PodResourcesLister service (List only), as a kubelet still serves it: every
// pod the host knows (not only active ones), regular containers only, devices as resource name
// and IDs without topology. Upstream: pkg/kubelet/apis/podresources/server_v1alpha1.go.
#pragma once

#include "podresources/arena_messages.h"
#include "podresources/client_gate.h"
#include "podresources/metrics.h"
#include "podresources/providers.h"
#include "podresources/v1alpha1/api.grpc.pb.h"

namespace devmgr::podresources {

// V1alpha1Service: each call's messages on its own arena; thread-safe; `providers`, `gate` and
// `counters` must outlive it.
class V1alpha1Service final : public ::v1alpha1::PodResourcesLister::CallbackService {
 public:
  V1alpha1Service(const Providers& providers, ClientGate& gate, Counters& counters);

  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* context,
                                 const ::v1alpha1::ListPodResourcesRequest* request,
                                 ::v1alpha1::ListPodResourcesResponse* response) override;

 private:
  const Providers providers_;
  ClientGate& gate_;
  Counters& counters_;
  ArenaMessages<::v1alpha1::ListPodResourcesRequest, ::v1alpha1::ListPodResourcesResponse>
      list_messages_;
};

}  // namespace devmgr::podresources
