#include "devicemanager/endpoint_impl.h"

#include <grpcpp/generic/generic_stub.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/plugin_channel.h"
#include "common/status.h"
#include "devicemanager/device_snapshot.h"

namespace devmgr::devicemanager {
namespace {

// How often a connection in progress looks at its cancellation flag.
constexpr absl::Duration kDialPollInterval = absl::Milliseconds(50);

// gRPC keeps a read buffer on every connection, even an idle one, sized by what the connection
// read lately: it starts at 8 KiB, doubles while reads fill it (up to 4 MiB) and shrinks by 1%
// per read after that. A plugin's connection is idle almost always, and a node may have
// hundreds: 8 KiB to start, and the size one full snapshot pushed it to, held that way cost
// about 20 KiB per endpoint (docs/PERFORMANCE.md). From 1 KiB it still doubles within a few reads
// for a large snapshot, and at 256 KiB per read a snapshot of 100,000 devices takes a dozen reads
// rather than one buffer of 4 MiB kept for good.
constexpr int kReadChunkBytes = 1024;
constexpr int kMaxReadChunkBytes = 256 * 1024;

constexpr char kListAndWatchMethod[] = "/v1beta1.DevicePlugin/ListAndWatch";

std::chrono::system_clock::time_point Deadline(absl::Duration timeout) {
  return absl::ToChronoTime(absl::Now() + timeout);
}

absl::Status WithPrefix(absl::string_view prefix, const grpc::Status& status) {
  absl::Status converted = FromGrpcCall(status);
  return absl::Status(converted.code(), absl::StrCat(prefix, converted.message()));
}

}  // namespace

// The ListAndWatch stream, read as bytes that DevicesFromWire reads itself. The call is made
// in gRPC's generic form, as a bidirectional one: on the wire that is the same call as the
// generated server-streaming one, one request (v1beta1.Empty, no bytes) and then the client's
// half-close. Owned by its EndpointImpl; while the call runs it holds a reference to the
// endpoint, handed to OnStreamEnded as the last act of OnDone.
class EndpointImpl::StreamReactor final
    : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit StreamReactor(EndpointImpl& endpoint) : endpoint_(endpoint) {
    grpc::Slice empty;
    request_ = grpc::ByteBuffer(&empty, 1);
  }

  void Start(std::shared_ptr<EndpointImpl> self) {
    self_ = std::move(self);
    grpc::GenericStub(endpoint_.channel_)
        .PrepareBidiStreamingCall(&context_, std::string(kListAndWatchMethod), grpc::StubOptions(),
                                  this);
    StartWriteLast(&request_, grpc::WriteOptions());
    StartRead(&message_);
    StartCall();
  }

  void Cancel() { context_.TryCancel(); }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream is over; OnDone follows with the status
    absl::StatusOr<std::vector<Device>> devices = Read();
    if (!devices.ok()) {
      // As in a Go client, a message that does not parse ends the stream. OnDone, gRPC's last
      // callback, reports why.
      malformed_ = absl::InternalError(
          absl::StrCat("failed to unmarshal the received message: ", devices.status().message()));
      context_.TryCancel();
      return;
    }
    endpoint_.callbacks_.OnDevicesUpdated(endpoint_, *std::move(devices));
    StartRead(&message_);
  }

  void OnDone(const grpc::Status& status) override {
    // The endpoint's reference to itself goes to the callbacks, which may destroy it and this
    // reactor with it: nothing touches `this` after the call.
    const absl::Status ended = malformed_.ok() ? FromGrpcStatus(status) : malformed_;
    EndpointCallbacks& callbacks = endpoint_.callbacks_;
    callbacks.OnStreamEnded(std::move(self_), ended);
  }

 private:
  // Read: the devices of the message just read, which is then let go.
  absl::StatusOr<std::vector<Device>> Read() {
    grpc::Slice bytes;
    // One slice: a large message comes in many, joined here (one copy, far cheaper than a
    // parse).
    const grpc::Status joined = message_.DumpToSingleSlice(&bytes);
    message_.Clear();
    if (!joined.ok()) return FromGrpcStatus(joined);
    return DevicesFromWire(
        absl::string_view(reinterpret_cast<const char*>(bytes.begin()), bytes.size()));
  }

  EndpointImpl& endpoint_;
  grpc::ClientContext context_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer message_;
  absl::Status malformed_;  // set when a message does not parse, before the cancel
  std::shared_ptr<EndpointImpl> self_;
};

EndpointImpl::EndpointImpl(std::string resource_name, std::filesystem::path socket,
                           const EndpointOptions& options, EndpointCallbacks& callbacks)
    : Endpoint(std::move(resource_name), std::move(socket)),
      options_(options),
      callbacks_(callbacks) {}

EndpointImpl::~EndpointImpl() = default;

absl::StatusOr<EndpointSharedPtr> EndpointImpl::Connect(std::string resource_name,
                                                        std::filesystem::path socket,
                                                        const EndpointOptions& options,
                                                        EndpointCallbacks& callbacks,
                                                        const ConnectLimits& limits) {
  // make_shared cannot reach the private constructor.
  std::shared_ptr<EndpointImpl> endpoint(
      new EndpointImpl(std::move(resource_name), std::move(socket), options, callbacks));

  grpc::ChannelArguments args = PluginChannelArguments();
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetInt(GRPC_ARG_TCP_READ_CHUNK_SIZE, kReadChunkBytes);
  args.SetInt(GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, kMaxReadChunkBytes);
  endpoint->channel_ = PluginChannel(endpoint->socket_path(), args);

  // A blocking dial like upstream's, in slices so that a stopping manager need not wait the
  // whole dial timeout.
  const absl::Time dial_deadline =
      std::min(absl::Now() + options.dial_timeout, limits.dial_deadline);
  grpc_connectivity_state state = endpoint->channel_->GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    if (limits.cancelled != nullptr && limits.cancelled->load()) {
      return absl::CancelledError("failed to dial device plugin: the device manager is stopping");
    }
    const absl::Time now = absl::Now();
    if (now >= dial_deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "failed to dial device plugin: no connection to ", endpoint->socket_path().string(),
          " within ", absl::FormatDuration(options.dial_timeout)));
    }
    endpoint->channel_->WaitForStateChange(
        state, absl::ToChronoTime(std::min(dial_deadline, now + kDialPollInterval)));
    state = endpoint->channel_->GetState(/*try_to_connect=*/true);
  }

  endpoint->stub_ = v1beta1::DevicePlugin::NewStub(endpoint->channel_);
  // The asynchronous form, so that cancellation can cut a hung plugin's deadline short.
  grpc::ClientContext context;
  context.set_deadline(Deadline(options.call_timeout));
  const v1beta1::Empty request;
  grpc::Status status;
  absl::Notification answered;
  endpoint->stub_->async()->GetDevicePluginOptions(&context, &request, &endpoint->plugin_options_,
                                                   [&](grpc::Status result) {
                                                     status = std::move(result);
                                                     answered.Notify();
                                                   });
  while (!answered.WaitForNotificationWithTimeout(kDialPollInterval)) {
    if (limits.cancelled != nullptr && limits.cancelled->load()) context.TryCancel();
  }
  if (!status.ok()) return WithPrefix("failed to get device plugin options: ", status);
  endpoint->reactor_ = std::make_unique<StreamReactor>(*endpoint);
  return endpoint;
}

absl::StatusOr<EndpointSharedPtr> EndpointFactoryImpl::Connect(std::string resource_name,
                                                               std::filesystem::path socket,
                                                               EndpointCallbacks& callbacks,
                                                               const ConnectLimits& limits) {
  return EndpointImpl::Connect(std::move(resource_name), std::move(socket), options_, callbacks,
                               limits);
}

void EndpointImpl::StartListAndWatch() {
  assert(reactor_ != nullptr);
  reactor_->Start(shared_from_this());
}

void EndpointImpl::CancelStream() { reactor_->Cancel(); }

absl::StatusOr<v1beta1::AllocateResponse> EndpointImpl::DoAllocate(
    const std::vector<std::string>& device_ids) {
  v1beta1::AllocateRequest request;
  auto* container = request.add_container_requests();
  for (const auto& id : device_ids) container->add_devices_ids(id);
  grpc::ClientContext context;
  context.set_deadline(Deadline(options_.call_timeout));
  v1beta1::AllocateResponse response;
  grpc::Status status = stub_->Allocate(&context, request, &response);
  if (!status.ok()) return FromGrpcCall(status);
  // What a kubelet's channel would have refused, in grpc-go's words (the channel's own limit is
  // larger, for ListAndWatch).
  if (const size_t bytes = response.ByteSizeLong(); bytes > kMaxAllocateResponseBytes) {
    return FromGrpcCall(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                     absl::StrCat("grpc: received message larger than max (", bytes,
                                                  " vs. ", kMaxAllocateResponseBytes, ")")));
  }
  return response;
}

absl::StatusOr<v1beta1::PreStartContainerResponse> EndpointImpl::DoPreStartContainer(
    const std::vector<std::string>& device_ids) {
  v1beta1::PreStartContainerRequest request;
  for (const auto& id : device_ids) request.add_devices_ids(id);
  grpc::ClientContext context;
  context.set_deadline(Deadline(options_.pre_start_timeout));
  v1beta1::PreStartContainerResponse response;
  grpc::Status status = stub_->PreStartContainer(&context, request, &response);
  if (!status.ok()) return FromGrpcCall(status);
  return response;
}

absl::StatusOr<v1beta1::PreferredAllocationResponse> EndpointImpl::DoGetPreferredAllocation(
    const std::vector<std::string>& available, const std::vector<std::string>& must_include,
    int size) {
  v1beta1::PreferredAllocationRequest request;
  auto* container = request.add_container_requests();
  for (const auto& id : available) container->add_available_deviceids(id);
  for (const auto& id : must_include) container->add_must_include_deviceids(id);
  container->set_allocation_size(size);
  grpc::ClientContext context;
  context.set_deadline(Deadline(options_.call_timeout));
  v1beta1::PreferredAllocationResponse response;
  grpc::Status status = stub_->GetPreferredAllocation(&context, request, &response);
  if (!status.ok()) return FromGrpcCall(status);
  return response;
}

}  // namespace devmgr::devicemanager
