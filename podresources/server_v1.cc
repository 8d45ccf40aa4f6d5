#include "podresources/server_v1.h"

#include "absl/strings/str_format.h"
#include "common/raw_request.h"
#include "common/status.h"
#include "podresources/pod_resources.h"

namespace devmgr::podresources {

grpc::ServerUnaryReactor* Finish(grpc::CallbackServerContext* context, const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

bool Admitted(grpc::CallbackServerContext* context, ClientGate& gate, Counters& counters) {
  if (gate.AllowRequest(gate.Identify(*context))) return true;
  counters.rate_limited.fetch_add(1, std::memory_order_relaxed);
  return false;
}

V1Service::V1Service(const Providers& providers, ClientGate& gate, Counters& counters,
                     bool get_enabled)
    : providers_(providers), gate_(gate), counters_(counters), get_enabled_(get_enabled) {}

grpc::ServerUnaryReactor* V1Service::List(grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) {
  if (grpc::Status read = ParseRawRequest<::v1::ListPodResourcesRequest>(*request); !read.ok()) {
    return Finish(context, read);
  }
  if (!Admitted(context, gate_, counters_)) return Finish(context, RateLimitedStatus());
  counters_.v1.requests_total.fetch_add(1, std::memory_order_relaxed);
  counters_.v1.requests_list.fetch_add(1, std::memory_order_relaxed);
  // Upstream reads the active pods and then frees the devices of pods that ended, so a pod that
  // ended in between is listed without the devices it no longer holds. Here the devices are
  // freed first, so that the revisions read next cover what the answer is built from: a pod
  // that ends after the collection is listed with its devices, one that ends before is not.
  providers_.devices->UpdateAllocatedDevices();
  *response = list_cache_.Answer(providers_);
  return Finish(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* V1Service::GetAllocatableResources(grpc::CallbackServerContext* context,
                                                             const grpc::ByteBuffer* request,
                                                             grpc::ByteBuffer* response) {
  if (grpc::Status read = ParseRawRequest<::v1::AllocatableResourcesRequest>(*request);
      !read.ok()) {
    return Finish(context, read);
  }
  if (!Admitted(context, gate_, counters_)) return Finish(context, RateLimitedStatus());
  counters_.v1.requests_total.fetch_add(1, std::memory_order_relaxed);
  counters_.v1.requests_get_allocatable.fetch_add(1, std::memory_order_relaxed);
  *response = allocatable_cache_.Answer(providers_);
  return Finish(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* V1Service::Get(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) {
  ::v1::GetPodResourcesRequest get;
  if (grpc::Status read = ParseRawRequest(*request, get); !read.ok()) {
    return Finish(context, read);
  }
  if (!Admitted(context, gate_, counters_)) return Finish(context, RateLimitedStatus());
  counters_.v1.requests_total.fetch_add(1, std::memory_order_relaxed);
  counters_.v1.requests_get.fetch_add(1, std::memory_order_relaxed);
  // Upstream returns plain Go errors here, which gRPC sends as UNKNOWN.
  if (!get_enabled_) {
    counters_.v1.errors_get.fetch_add(1, std::memory_order_relaxed);
    return Finish(context, grpc::Status(grpc::StatusCode::UNKNOWN, kGetDisabledMessage));
  }
  std::optional<Pod> pod = providers_.pods->GetPodByName(get.pod_namespace(), get.pod_name());
  if (!pod.has_value()) {
    counters_.v1.errors_get.fetch_add(1, std::memory_order_relaxed);
    return Finish(context, GrpcStatus(grpc::StatusCode::UNKNOWN,
                                      absl::StrFormat("pod %s in namespace %s not found",
                                                      get.pod_name(), get.pod_namespace())));
  }
  ::v1::GetPodResourcesResponse answer;
  FillPodResources(*pod, providers_, *answer.mutable_pod_resources());
  return Finish(context, SerializeRawAnswer(answer, *response));
}

}  // namespace devmgr::podresources
