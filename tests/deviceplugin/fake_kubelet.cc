#include "tests/deviceplugin/fake_kubelet.h"

#include <algorithm>
#include <chrono>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/go_quote.h"
#include "common/plugin_channel.h"
#include "common/status.h"
#include "common/unix_socket.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace devmgr::testing {
namespace {

std::chrono::system_clock::time_point In(std::chrono::milliseconds d) {
  return std::chrono::system_clock::now() + d;
}

// Dial blocks up to 10 s for a connection, as the kubelet's dials do. A socket file can exist a
// moment before its server listens, so retries come quickly instead of after gRPC's default
// one-second back-off.
std::shared_ptr<grpc::Channel> Dial(const std::filesystem::path& socket) {
  grpc::ChannelArguments args = PluginChannelArguments();  // as the device manager's dial
  args.SetMaxReceiveMessageSize(-1);  // 100,000 devices are more than the 4 MiB default
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 100);
  auto channel = PluginChannel(socket, args);
  if (!channel->WaitForConnected(In(std::chrono::seconds(10)))) return nullptr;
  return channel;
}

}  // namespace

// One plugin connection: the channel and its ListAndWatch stream. Deleted only after OnDone.
class FakeKubelet::Connection final
    : public grpc::ClientReadReactor<v1beta1::ListAndWatchResponse> {
 public:
  Connection(FakeKubelet& kubelet, std::string resource, std::shared_ptr<grpc::Channel> channel)
      : kubelet_(kubelet),
        resource_(std::move(resource)),
        channel_(std::move(channel)),
        stub_(v1beta1::DevicePlugin::NewStub(channel_)) {}

  void Begin() {
    stub_->async()->ListAndWatch(&context_, &request_, this);
    StartRead(&response_);
    StartCall();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    {
      absl::MutexLock lock(&kubelet_.mu_);
      SeenResource& seen = kubelet_.resources_[resource_];
      ++seen.updates;
      seen.devices.clear();
      for (const v1beta1::Device& device : response_.devices()) {
        SeenDevice& d = seen.devices[device.id()];
        d.health = device.health();
        for (const auto& node : device.topology().nodes()) d.numa_nodes.push_back(node.id());
      }
    }
    StartRead(&response_);
  }

  void OnDone(const grpc::Status& /*status*/) override {
    {
      absl::MutexLock lock(&kubelet_.mu_);
      auto it = kubelet_.connections_.find(resource_);
      if (it != kubelet_.connections_.end() && it->second.get() == this) {
        kubelet_.resources_[resource_].connected = false;
      }
    }
    done_.Notify();
  }

  void Cancel() { context_.TryCancel(); }
  void WaitDone() { done_.WaitForNotification(); }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

 private:
  FakeKubelet& kubelet_;
  const std::string resource_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  grpc::ClientContext context_;
  v1beta1::Empty request_;
  v1beta1::ListAndWatchResponse response_;
  absl::Notification done_;
};

class FakeKubelet::RegistrationService final : public v1beta1::Registration::CallbackService {
 public:
  explicit RegistrationService(FakeKubelet& kubelet) : kubelet_(kubelet) {}

  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* context,
                                     const v1beta1::RegisterRequest* request,
                                     v1beta1::Empty* /*response*/) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    {
      absl::MutexLock lock(&kubelet_.mu_);
      kubelet_.requests_.push_back(*request);
    }
    if (request->version() != "v1beta1") {
      reactor->Finish(grpc::Status(
          grpc::StatusCode::UNKNOWN,
          absl::StrCat("requested API version ", GoQuote(request->version()),
                       " is not supported by kubelet. Supported version is [\"v1beta1\"]")));
      return reactor;
    }
    // Like the kubelet, answer only once the plugin has been dialed; off the gRPC threads.
    kubelet_.loop_.Post([this, reactor, request] {
      absl::Status status =
          kubelet_.Connect(request->resource_name(), kubelet_.plugin_dir_ / request->endpoint());
      // The kubelet's refusals are plain Go errors: UNKNOWN on the wire.
      reactor->Finish(status.ok()
                          ? grpc::Status::OK
                          : grpc::Status(grpc::StatusCode::UNKNOWN, std::string(status.message())));
    });
    return reactor;
  }

 private:
  FakeKubelet& kubelet_;
};

FakeKubelet::FakeKubelet(std::filesystem::path plugin_dir) : plugin_dir_(std::move(plugin_dir)) {}

FakeKubelet::~FakeKubelet() { Stop(); }

absl::Status FakeKubelet::Start(bool remove_plugin_sockets) {
  std::error_code ec;
  std::filesystem::create_directories(plugin_dir_, ec);
  if (remove_plugin_sockets) {
    absl::Status status = RemoveSocketsIn(plugin_dir_);
    if (!status.ok()) return status;
  }
  absl::Status status = RemoveStaleSocket(kubelet_socket());
  if (!status.ok()) return status;
  service_ = std::make_unique<RegistrationService>(*this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(kubelet_socket()), grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) return absl::UnavailableError("cannot serve kubelet.sock");
  return absl::OkStatus();
}

void FakeKubelet::Stop() {
  if (server_ != nullptr) {
    // Waits for Register calls in progress, which the loop finishes.
    server_->Shutdown(In(std::chrono::seconds(5)));
    server_.reset();
    service_.reset();
    (void)RemoveStaleSocket(kubelet_socket());
  }
  CloseConnections();
}

void FakeKubelet::CloseConnections() {
  std::map<std::string, std::unique_ptr<Connection>> connections;
  {
    absl::MutexLock lock(&mu_);
    connections.swap(connections_);
    for (auto& [name, resource] : resources_) resource.connected = false;
  }
  for (auto& [name, connection] : connections) connection->Cancel();
  for (auto& [name, connection] : connections) connection->WaitDone();
}

absl::Status FakeKubelet::Connect(const std::string& resource_name,
                                  const std::filesystem::path& socket) {
  auto channel = Dial(socket);
  if (channel == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("failed to dial device plugin: cannot connect to ", socket.string()));
  }
  auto stub = v1beta1::DevicePlugin::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(In(std::chrono::seconds(10)));
  v1beta1::Empty empty;
  v1beta1::DevicePluginOptions options;
  absl::Status status = FromGrpcStatus(stub->GetDevicePluginOptions(&context, empty, &options));
  if (!status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("failed to get device plugin options: ", status.message()));
  }
  auto connection = std::make_unique<Connection>(*this, resource_name, channel);
  Connection* raw = connection.get();
  std::unique_ptr<Connection> old;
  {
    absl::MutexLock lock(&mu_);
    old = std::exchange(connections_[resource_name], std::move(connection));
    SeenResource& seen = resources_[resource_name];
    ++seen.registrations;
    seen.options = options;
    seen.endpoint = socket.string();
    seen.connected = true;
  }
  raw->Begin();
  if (old != nullptr) {
    old->Cancel();
    old->WaitDone();
  }
  return absl::OkStatus();
}

absl::Status FakeKubelet::RegisterFromRegistry(const std::filesystem::path& socket) {
  auto channel = Dial(socket);
  if (channel == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot dial ", socket.string()));
  }
  auto stub = pluginregistration::Registration::NewStub(channel);
  pluginregistration::PluginInfo info;
  {
    grpc::ClientContext context;
    context.set_deadline(In(std::chrono::seconds(1)));
    absl::Status status =
        FromGrpcStatus(stub->GetInfo(&context, pluginregistration::InfoRequest(), &info));
    if (!status.ok()) return status;
  }
  absl::Status status;
  if (info.type() != "DevicePlugin") {
    status = absl::InvalidArgumentError(absl::StrCat(
        "RegisterPlugin error -- no handler registered for plugin type: ", info.type()));
  } else if (std::find(info.supported_versions().begin(), info.supported_versions().end(),
                       "v1beta1") == info.supported_versions().end()) {
    status = absl::InvalidArgumentError(
        "RegisterPlugin error -- plugin validation failed with err: manager version, v1beta1, "
        "is not among plugin supported versions");
  } else {
    status = Connect(info.name(), info.endpoint().empty() ? socket.string() : info.endpoint());
  }
  pluginregistration::RegistrationStatus notify;
  notify.set_plugin_registered(status.ok());
  notify.set_error(std::string(status.message()));
  grpc::ClientContext context;
  context.set_deadline(In(std::chrono::seconds(5)));
  pluginregistration::RegistrationStatusResponse reply;
  absl::Status notified = FromGrpcStatus(stub->NotifyRegistrationStatus(&context, notify, &reply));
  return status.ok() ? notified : status;
}

int FakeKubelet::register_calls() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(requests_.size());
}

std::vector<v1beta1::RegisterRequest> FakeKubelet::register_requests() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

SeenResource FakeKubelet::Resource(const std::string& resource_name) const {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(resource_name);
  return it == resources_.end() ? SeenResource() : it->second;
}

std::shared_ptr<grpc::Channel> FakeKubelet::ChannelOf(const std::string& resource_name) const {
  absl::MutexLock lock(&mu_);
  auto it = connections_.find(resource_name);
  return it == connections_.end() ? nullptr : it->second->channel();
}

absl::StatusOr<v1beta1::AllocateResponse> FakeKubelet::Allocate(const std::string& resource_name,
                                                                const std::vector<std::string>& ids,
                                                                std::chrono::milliseconds timeout) {
  auto channel = ChannelOf(resource_name);
  if (channel == nullptr) return absl::NotFoundError(resource_name);
  v1beta1::AllocateRequest request;
  auto* container = request.add_container_requests();
  for (const auto& id : ids) container->add_devices_ids(id);
  grpc::ClientContext context;
  context.set_deadline(In(timeout));
  v1beta1::AllocateResponse response;
  absl::Status status = FromGrpcStatus(
      v1beta1::DevicePlugin::NewStub(channel)->Allocate(&context, request, &response));
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<v1beta1::PreferredAllocationResponse> FakeKubelet::GetPreferredAllocation(
    const std::string& resource_name, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size) {
  auto channel = ChannelOf(resource_name);
  if (channel == nullptr) return absl::NotFoundError(resource_name);
  v1beta1::PreferredAllocationRequest request;
  auto* container = request.add_container_requests();
  for (const auto& id : available) container->add_available_deviceids(id);
  for (const auto& id : must_include) container->add_must_include_deviceids(id);
  container->set_allocation_size(size);
  grpc::ClientContext context;
  context.set_deadline(In(std::chrono::seconds(10)));
  v1beta1::PreferredAllocationResponse response;
  absl::Status status =
      FromGrpcStatus(v1beta1::DevicePlugin::NewStub(channel)->GetPreferredAllocation(
          &context, request, &response));
  if (!status.ok()) return status;
  return response;
}

absl::Status FakeKubelet::PreStartContainer(const std::string& resource_name,
                                            const std::vector<std::string>& ids) {
  auto channel = ChannelOf(resource_name);
  if (channel == nullptr) return absl::NotFoundError(resource_name);
  v1beta1::PreStartContainerRequest request;
  for (const auto& id : ids) request.add_devices_ids(id);
  grpc::ClientContext context;
  context.set_deadline(In(std::chrono::seconds(30)));
  v1beta1::PreStartContainerResponse response;
  return FromGrpcStatus(
      v1beta1::DevicePlugin::NewStub(channel)->PreStartContainer(&context, request, &response));
}

}  // namespace devmgr::testing
