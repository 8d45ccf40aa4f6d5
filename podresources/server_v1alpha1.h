// The v1alpha1.PodResourcesLister service (List only), as a kubelet still serves it: every
// pod the host knows (not only active ones), regular containers only, devices as resource name
// and IDs without topology. Upstream: pkg/kubelet/apis/podresources/server_v1alpha1.go.
#pragma once

#include "podresources/client_gate.h"
#include "podresources/metrics.h"
#include "podresources/providers.h"
#include "podresources/v1alpha1/api.grpc.pb.h"

namespace devmgr::podresources {

// V1alpha1Service: its List is raw (bytes in, bytes out), as v1's methods are, so that a request
// that does not parse gets INTERNAL as from a Go kubelet's gRPC; the answer is built on an arena.
// Thread-safe; `providers`, `gate` and `counters` must outlive it.
class V1alpha1Service final : public ::v1alpha1::PodResourcesLister::WithRawCallbackMethod_List<
                                  ::v1alpha1::PodResourcesLister::Service> {
 public:
  V1alpha1Service(const Providers& providers, ClientGate& gate, Counters& counters);

  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;

 private:
  const Providers providers_;
  ClientGate& gate_;
  Counters& counters_;
};

}  // namespace devmgr::podresources
