// The upcall seams inside the device manager: what an Endpoint tells its owner about its
// ListAndWatch stream, and what the registration server asks of its owner for each Register
// call. ManagerImpl implements both; tests can implement them to drive an Endpoint or the
// server alone.
#pragma once

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "devicemanager/types.h"

namespace v1beta1 {
class RegisterRequest;
}

namespace devmgr::devicemanager {

class Endpoint;

// Called from the endpoint's threads (gRPC reactor threads for EndpointImpl), or inline from
// Endpoint::CancelStream. Implementations must not block: no file I/O, no RPCs, at most a
// short critical section. For one endpoint, calls are sequential, and OnStreamEnded is the
// last one.
class EndpointCallbacks {
 public:
  virtual ~EndpointCallbacks() = default;
  // A full ListAndWatch snapshot: these are now all the devices of the endpoint's resource.
  virtual void OnDevicesUpdated(const Endpoint& endpoint, std::vector<Device>&& devices) = 0;
  // The stream ended (the plugin went away, or it was cancelled); `status` says why.
  virtual void OnStreamEnded(const Endpoint& endpoint, const absl::Status& status) = 0;
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
