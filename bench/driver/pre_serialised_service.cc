#include "bench/driver/pre_serialised_service.h"

namespace devmgr::bench {
namespace {

// One call: read the request (a unary call has exactly one), then write the stored answer.
class Reactor final : public grpc::ServerGenericBidiReactor {
 public:
  explicit Reactor(const grpc::ByteBuffer& response) : response_(response) { StartRead(&request_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::INTERNAL, "no request"));
      return;
    }
    StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
  }
  void OnDone() override { delete this; }  // NOLINT(cppcoreguidelines-owning-memory)

 private:
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;  // a ByteBuffer copy shares the slices: no bytes are copied
};

}  // namespace

PreSerialisedService::PreSerialisedService(const std::string& bytes) {
  grpc::Slice slice(bytes);
  response_ = grpc::ByteBuffer(&slice, 1);
}

grpc::ServerGenericBidiReactor* PreSerialisedService::CreateReactor(
    grpc::GenericCallbackServerContext*) {
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): a reactor frees itself in OnDone.
  return new Reactor(response_);
}

}  // namespace devmgr::bench
