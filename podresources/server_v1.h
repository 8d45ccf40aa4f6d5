// The v1.PodResourcesLister service (List, GetAllocatableResources, Get), answering exactly as
// a kubelet does: same containers, same device entries, same error texts and codes. Upstream:
// pkg/kubelet/apis/podresources/server_v1.go.
#pragma once

#include "podresources/allocatable_cache.h"
#include "podresources/client_gate.h"
#include "podresources/list_cache.h"
#include "podresources/metrics.h"
#include "podresources/providers.h"
#include "podresources/v1/api.grpc.pb.h"

namespace devmgr::podresources {

// Error texts, exactly as upstream's (returned as plain errors: gRPC status UNKNOWN).
inline constexpr char kGetDisabledMessage[] = "PodResources API Get method disabled";

// V1Service: callback-API handlers that do their work inline (provider calls only) and finish
// at once. Every method is raw (bytes in, bytes out): it reads its request itself, before the
// rate limit, so that one that does not parse gets INTERNAL as from a Go kubelet's gRPC, and
// List and GetAllocatableResources can send what they kept again (ListCache,
// AllocatableCache). Thread-safe. `providers`, `gate` and `counters` are not owned and must
// outlive it.
class V1Service final
    : public ::v1::PodResourcesLister::WithRawCallbackMethod_GetAllocatableResources<
          ::v1::PodResourcesLister::WithRawCallbackMethod_Get<
              ::v1::PodResourcesLister::WithRawCallbackMethod_List<
                  ::v1::PodResourcesLister::Service>>> {
 public:
  // `get_enabled` plays upstream's KubeletPodResourcesGet feature gate.
  V1Service(const Providers& providers, ClientGate& gate, Counters& counters, bool get_enabled);

  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetAllocatableResources(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* request,
                                                    grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context,
                                const grpc::ByteBuffer* request,
                                grpc::ByteBuffer* response) override;

 private:
  const Providers providers_;
  ClientGate& gate_;
  Counters& counters_;
  const bool get_enabled_;
  ListCache list_cache_;
  AllocatableCache allocatable_cache_;
};

// Finish completes a unary call with `status` on the context's default reactor.
grpc::ServerUnaryReactor* Finish(grpc::CallbackServerContext* context, const grpc::Status& status);

// Admitted: the caller may proceed under the rate limit; counts a rejection otherwise.
bool Admitted(grpc::CallbackServerContext* context, ClientGate& gate, Counters& counters);

}  // namespace devmgr::podresources
