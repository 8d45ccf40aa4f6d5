// The upcall seams inside the device manager: what an Endpoint tells its owner about its
// ListAndWatch stream, and what the registration server asks of its owner for each Register
// call. ManagerImpl implements both; tests can implement them to drive an Endpoint or the
// server alone.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "devicemanager/types.h"

namespace v1beta1 {
class RegisterRequest;
}

namespace devmgr::devicemanager {

class Endpoint;
using EndpointSharedPtr = std::shared_ptr<Endpoint>;

// Called from the endpoint's threads (gRPC reactor threads for EndpointImpl), or inline from
// Endpoint::CancelStream. Implementations must not block: no file I/O, no RPCs, at most a
// short critical section. For one endpoint, calls are sequential, and OnStreamEnded is the
// last one.
class EndpointCallbacks {
 public:
  virtual ~EndpointCallbacks() = default;
  // A full ListAndWatch snapshot: these are now all the devices of the endpoint's resource.
  virtual void OnDevicesUpdated(const Endpoint& endpoint, std::vector<Device>&& devices) = 0;
  // The stream ended (the plugin went away, or it was cancelled); `status` says why. The
  // stream's own reference to the endpoint comes with the call, and the endpoint then holds
  // none to itself: whoever drops the last reference destroys it, channel and all.
  //
  // Dropping it on this thread (a gRPC library thread for EndpointImpl) is safe only while
  // another object of gRPC's callback API lives in the process. gRPC 1.51 shares one callback
  // queue among them and shuts it down on the thread that lets the last one go; when that is
  // one of the queue's own threads, the thread goes on using the queue it freed (a double free;
  // grpc/grpc#32584). An owner that may be that last object releases the reference (resets the
  // argument) before it lets anything that keeps another one alive go: ManagerImpl drops it
  // before Stop can return, while its registration server still serves.
  virtual void OnStreamEnded(EndpointSharedPtr endpoint, const absl::Status& status) = 0;
};

// Called from a gRPC library thread for each Register RPC. OnRegister must not block; it must
// call `done` exactly once, from any thread, possibly inline. The RPC is answered with that
// status's message, and a refusal with the code UNKNOWN, as the kubelet answers with plain Go
// errors.
class RegistrationCallbacks {
 public:
  using DoneFn = std::function<void(const absl::Status&)>;
  virtual ~RegistrationCallbacks() = default;
  virtual void OnRegister(const v1beta1::RegisterRequest& request, DoneFn done) = 0;
};

}  // namespace devmgr::devicemanager
