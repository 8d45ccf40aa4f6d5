#include "devicemanager/registration_server.h"

#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/raw_request.h"
#include "common/status.h"
#include "common/unix_socket.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace devmgr::devicemanager {

// Register is served raw (bytes in, bytes out) so that it reads its request itself: one that
// does not parse gets INTERNAL, as from a kubelet's grpc-go (a typed method would answer
// UNIMPLEMENTED). A refusal goes out as UNKNOWN with its text, as the kubelet's plain Go errors
// do; its absl code stays the embedder's.
class RegistrationServer::Service final
    : public v1beta1::Registration::WithRawCallbackMethod_Register<v1beta1::Registration::Service> {
 public:
  explicit Service(RegistrationCallbacks& callbacks) : callbacks_(callbacks) {}

  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override {
    // The default reactor may be finished later, from any thread; gRPC keeps `response` until
    // then, and the parsed request is kept as long.
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    auto parsed = std::make_shared<v1beta1::RegisterRequest>();
    if (grpc::Status read = ParseRawRequest(*request, *parsed); !read.ok()) {
      reactor->Finish(read);
      return reactor;
    }
    callbacks_.OnRegister(*parsed, [reactor, response, parsed](const absl::Status& status) {
      if (!status.ok()) {
        reactor->Finish(GrpcStatus(grpc::StatusCode::UNKNOWN, status.message()));
        return;
      }
      reactor->Finish(SerializeRawAnswer(v1beta1::Empty(), *response));
    });
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
