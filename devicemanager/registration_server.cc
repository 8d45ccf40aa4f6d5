#include "devicemanager/registration_server.h"

#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/unix_socket.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace devmgr::devicemanager {

class RegistrationServer::Service final : public v1beta1::Registration::CallbackService {
 public:
  explicit Service(RegistrationCallbacks& callbacks) : callbacks_(callbacks) {}

  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* context,
                                     const v1beta1::RegisterRequest* request,
                                     v1beta1::Empty* /*response*/) override {
    // The default reactor may be finished later, from any thread; gRPC keeps `request` alive
    // until then.
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    callbacks_.OnRegister(
        *request, [reactor](const absl::Status& status) { reactor->Finish(ToGrpcStatus(status)); });
    return reactor;
  }

 private:
  RegistrationCallbacks& callbacks_;
};

RegistrationServer::RegistrationServer(RegistrationCallbacks& callbacks)
    : service_(std::make_unique<Service>(callbacks)) {}

RegistrationServer::~RegistrationServer() { Shutdown(absl::ZeroDuration()); }

absl::Status RegistrationServer::Start(const std::filesystem::path& socket) {
  if (absl::Status status = ValidateSocketPath(socket); !status.ok()) return status;
  if (absl::Status status = RemoveStaleSocket(socket); !status.ok()) return status;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(socket), grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", socket.string()));
  }
  socket_ = socket;
  return absl::OkStatus();
}

void RegistrationServer::Shutdown(absl::Duration grace) {
  if (server_ == nullptr) return;
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
  server_.reset();
  std::error_code ignored;
  std::filesystem::remove(socket_, ignored);
}

}  // namespace devmgr::devicemanager
