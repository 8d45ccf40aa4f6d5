// RegistrationServer: the v1beta1.Registration gRPC service on `kubelet.sock`, where device
// plugins announce themselves. It uses the callback API: each Register call is handed to
// RegistrationCallbacks::OnRegister on a gRPC thread, and answered whenever (and from
// whichever thread) the owner calls `done`, so the slow part of registration (dialing the
// plugin) never blocks a gRPC library thread.
//
// Thread-safety: Start and Shutdown are called by the owner, not concurrently with each other.
#pragma once

#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "devicemanager/callbacks.h"

namespace devmgr::devicemanager {

class RegistrationServer {
 public:
  // `callbacks` must outlive the server.
  explicit RegistrationServer(RegistrationCallbacks& callbacks);
  // Shuts down if still serving.
  ~RegistrationServer();
  RegistrationServer(const RegistrationServer&) = delete;
  RegistrationServer& operator=(const RegistrationServer&) = delete;

  // Start listens on `socket` (removing a stale socket file there first) and serves.
  // InvalidArgument for a bad path, Unavailable if it cannot listen. Blocks briefly.
  absl::Status Start(const std::filesystem::path& socket);

  // Shutdown stops accepting calls, waits up to `grace` for calls in flight (each needs its
  // `done`), then cancels the rest and removes the socket file. Idempotent.
  void Shutdown(absl::Duration grace);

 private:
  class Service;

  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::filesystem::path socket_;
};

}  // namespace devmgr::devicemanager
