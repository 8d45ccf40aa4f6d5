// The devmgr.podresources.v1.PodResourcesWatcher service: one server-streaming Watch per
// client stream, fed by the WatchHub. Each stream is a callback-API write reactor with one
// write in flight and a WatchBacklog of what is still unsent (see watch_backlog.h for the
// slow-consumer policy). Opening a stream takes one token of the client's rate limit and one
// of its stream slots.
#pragma once

#include "devmgr/podresources/v1/api.grpc.pb.h"
#include "podresources/client_gate.h"
#include "podresources/metrics.h"
#include "podresources/watch_hub.h"

namespace devmgr::podresources {

// The message of a stream that was too slow and got ended.
inline constexpr char kSlowConsumerMessage[] = "watch stream ended: client too slow";

// WatchService: thread-safe; `hub`, `gate` and `counters` must outlive it, and streams must all
// be done (the gRPC server shut down) before the hub is destroyed.
class WatchService final : public ::devmgr::podresources::v1::PodResourcesWatcher::CallbackService {
 public:
  WatchService(WatchHub& hub, ClientGate& gate, Counters& counters);

  grpc::ServerWriteReactor<WatchResponse>* Watch(
      grpc::CallbackServerContext* context,
      const ::devmgr::podresources::v1::WatchRequest* request) override;

 private:
  WatchHub& hub_;
  ClientGate& gate_;
  Counters& counters_;
};

}  // namespace devmgr::podresources
