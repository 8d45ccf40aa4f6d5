#include "podresources/server_v1alpha1.h"

#include "common/raw_request.h"
#include "podresources/answer_arena.h"
#include "podresources/pod_resources.h"
#include "podresources/server_v1.h"

namespace devmgr::podresources {

V1alpha1Service::V1alpha1Service(const Providers& providers, ClientGate& gate, Counters& counters)
    : providers_(providers), gate_(gate), counters_(counters) {}

grpc::ServerUnaryReactor* V1alpha1Service::List(grpc::CallbackServerContext* context,
                                                const grpc::ByteBuffer* request,
                                                grpc::ByteBuffer* response) {
  if (grpc::Status read = ParseRawRequest<::v1alpha1::ListPodResourcesRequest>(*request);
      !read.ok()) {
    return Finish(context, read);
  }
  if (!Admitted(context, gate_, counters_)) return Finish(context, RateLimitedStatus());
  counters_.v1alpha1.requests_total.fetch_add(1, std::memory_order_relaxed);
  const std::vector<Pod> pods = providers_.pods->GetPods();
  providers_.devices->UpdateAllocatedDevices();
  google::protobuf::Arena arena(AnswerArenaOptions());
  auto* answer =
      google::protobuf::Arena::CreateMessage<::v1alpha1::ListPodResourcesResponse>(&arena);
  for (const Pod& pod : pods) {
    ::v1alpha1::PodResources* out = answer->add_pod_resources();
    out->set_name(pod.name);
    out->set_namespace_(pod.namespace_name);
    for (const Container& container : pod.containers) {
      ::v1alpha1::ContainerResources* resources = out->add_containers();
      resources->set_name(container.name);
      // Same entries as v1 (one per device and NUMA node), topology dropped, as upstream's
      // v1DevicesToAlphaV1 does.
      google::protobuf::RepeatedPtrField<::v1::ContainerDevices> devices;
      AppendContainerDevices(providers_.devices->GetDevices(pod.uid, container.name), devices);
      for (::v1::ContainerDevices& device : devices) {
        ::v1alpha1::ContainerDevices* alpha = resources->add_devices();
        alpha->set_resource_name(std::move(*device.mutable_resource_name()));
        alpha->mutable_device_ids()->Swap(device.mutable_device_ids());
      }
    }
  }
  return Finish(context, SerializeRawAnswer(*answer, *response));
}

}  // namespace devmgr::podresources
