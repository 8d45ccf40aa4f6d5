#include "tests/testlib/fake_device_plugin.h"

#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/unix_socket.h"

namespace devmgr::testing {

v1beta1::Device MakeDevice(const std::string& id, bool healthy,
                           const std::vector<int64_t>& numa_nodes) {
  v1beta1::Device device;
  device.set_id(id);
  device.set_health(healthy ? "Healthy" : "Unhealthy");
  if (!numa_nodes.empty()) {
    for (int64_t node : numa_nodes) device.mutable_topology()->add_nodes()->set_id(node);
  }
  return device;
}

std::vector<v1beta1::Device> MakeDevices(int n, const std::string& prefix) {
  std::vector<v1beta1::Device> devices;
  devices.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) devices.push_back(MakeDevice(absl::StrCat(prefix, i)));
  return devices;
}

namespace {

// Snapshot is `devices` as one ListAndWatch message, in their order and exactly as given.
deviceplugin::ListAndWatchStreams::Snapshot Snapshot(std::vector<v1beta1::Device> devices) {
  v1beta1::ListAndWatchResponse message;
  message.mutable_devices()->Reserve(static_cast<int>(devices.size()));
  for (auto& device : devices) *message.add_devices() = std::move(device);
  return deviceplugin::ListAndWatchStreams::SnapshotOf(message.SerializeAsString());
}

}  // namespace

class FakeDevicePlugin::Service final
    : public v1beta1::DevicePlugin::WithRawCallbackMethod_ListAndWatch<
          v1beta1::DevicePlugin::CallbackService> {
 public:
  explicit Service(FakeDevicePlugin& plugin) : plugin_(plugin) {}

  grpc::ServerUnaryReactor* GetDevicePluginOptions(
      grpc::CallbackServerContext* context, const v1beta1::Empty* /*request*/,
      v1beta1::DevicePluginOptions* response) override {
    ++plugin_.get_options_calls_;
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (plugin_.options_.hang_get_options) {
      absl::MutexLock lock(&plugin_.mu_);
      if (!plugin_.stopping_) {
        plugin_.hung_calls_.push_back(reactor);  // answered by Stop
        return reactor;
      }
    }
    response->set_pre_start_required(plugin_.options_.pre_start_required);
    response->set_get_preferred_allocation_available(
        plugin_.options_.get_preferred_allocation_available);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerWriteReactor<grpc::ByteBuffer>* ListAndWatch(
      grpc::CallbackServerContext* /*context*/, const grpc::ByteBuffer* request) override {
    ++plugin_.list_and_watch_calls_;
    return plugin_.streams_.Open(*request);
  }

  grpc::ServerUnaryReactor* Allocate(grpc::CallbackServerContext* context,
                                     const v1beta1::AllocateRequest* request,
                                     v1beta1::AllocateResponse* response) override {
    ++plugin_.allocate_calls_;
    AllocateFn fn;
    {
      absl::MutexLock lock(&plugin_.mu_);
      fn = plugin_.allocate_fn_;
      if (plugin_.options_.hang_allocate && !plugin_.stopping_) {
        grpc::ServerUnaryReactor* hung = context->DefaultReactor();
        plugin_.hung_calls_.push_back(hung);  // answered by Stop
        return hung;
      }
    }
    grpc::Status status = grpc::Status::OK;
    if (fn) {
      status = fn(*request, response);
    } else {
      for (int i = 0; i < request->container_requests_size(); ++i)
        response->add_container_responses();
    }
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }

  grpc::ServerUnaryReactor* PreStartContainer(
      grpc::CallbackServerContext* context, const v1beta1::PreStartContainerRequest* request,
      v1beta1::PreStartContainerResponse* /*response*/) override {
    ++plugin_.pre_start_calls_;
    PreStartFn fn;
    {
      absl::MutexLock lock(&plugin_.mu_);
      fn = plugin_.pre_start_fn_;
    }
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(fn ? fn(*request) : grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* GetPreferredAllocation(
      grpc::CallbackServerContext* context, const v1beta1::PreferredAllocationRequest* request,
      v1beta1::PreferredAllocationResponse* response) override {
    ++plugin_.preferred_calls_;
    PreferredFn fn;
    {
      absl::MutexLock lock(&plugin_.mu_);
      fn = plugin_.preferred_fn_;
    }
    if (fn) {
      grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
      reactor->Finish(fn(*request, response));
      return reactor;
    }
    // Prefers the must-include devices, then the first available ones.
    for (const auto& container : request->container_requests()) {
      auto* out = response->add_container_responses();
      for (const auto& id : container.must_include_deviceids()) out->add_deviceids(id);
      for (const auto& id : container.available_deviceids()) {
        if (out->deviceids_size() >= container.allocation_size()) break;
        bool already = false;
        for (const auto& have : out->deviceids()) already = already || have == id;
        if (!already) out->add_deviceids(id);
      }
    }
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  FakeDevicePlugin& plugin_;
};

FakeDevicePlugin::FakeDevicePlugin(std::filesystem::path socket, std::string resource_name,
                                   std::vector<v1beta1::Device> devices, Options options)
    : socket_(std::move(socket)),
      resource_name_(std::move(resource_name)),
      options_(options),
      streams_(Snapshot(std::move(devices)), resource_name_, /*logger=*/nullptr),
      service_(std::make_unique<Service>(*this)) {}

FakeDevicePlugin::~FakeDevicePlugin() { Stop(); }

absl::Status FakeDevicePlugin::Start() {
  if (absl::Status status = ValidateSocketPath(socket_); !status.ok()) return status;
  if (absl::Status status = RemoveStaleSocket(socket_); !status.ok()) return status;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(socket_), grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) return absl::UnavailableError("cannot listen on " + socket_.string());
  return absl::OkStatus();
}

void FakeDevicePlugin::Stop() {
  std::vector<grpc::ServerUnaryReactor*> hung;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    hung.swap(hung_calls_);
  }
  streams_.Close();
  for (grpc::ServerUnaryReactor* reactor : hung) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "plugin stopped"));
  }
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
    streams_.WaitForAllDone();
    server_->Wait();
    server_.reset();
  }
  std::error_code ignored;
  std::filesystem::remove(socket_, ignored);
}

absl::Status FakeDevicePlugin::Register(const std::filesystem::path& kubelet_socket,
                                        absl::Duration timeout) const {
  return Register(kubelet_socket, "v1beta1", resource_name_, socket_.filename().string(), timeout);
}

absl::Status FakeDevicePlugin::Register(const std::filesystem::path& kubelet_socket,
                                        const std::string& version,
                                        const std::string& resource_name,
                                        const std::string& endpoint, absl::Duration timeout) const {
  auto channel =
      grpc::CreateChannel(UnixTarget(kubelet_socket), grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest request;
  request.set_version(version);
  request.set_resource_name(resource_name);
  request.set_endpoint(endpoint);
  request.mutable_options()->set_pre_start_required(options_.pre_start_required);
  request.mutable_options()->set_get_preferred_allocation_available(
      options_.get_preferred_allocation_available);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  context.set_wait_for_ready(true);
  v1beta1::Empty response;
  return FromGrpcStatus(stub->Register(&context, request, &response));
}

void FakeDevicePlugin::SetDevices(std::vector<v1beta1::Device> devices) {
  streams_.Publish(Snapshot(std::move(devices)));
}

void FakeDevicePlugin::SetSnapshotBytes(const std::string& bytes) {
  streams_.Publish(deviceplugin::ListAndWatchStreams::SnapshotOf(bytes));
}

void FakeDevicePlugin::EndStreams() { streams_.EndAll(grpc::Status::OK); }

void FakeDevicePlugin::OnAllocate(AllocateFn fn) {
  absl::MutexLock lock(&mu_);
  allocate_fn_ = std::move(fn);
}

void FakeDevicePlugin::OnPreStartContainer(PreStartFn fn) {
  absl::MutexLock lock(&mu_);
  pre_start_fn_ = std::move(fn);
}

void FakeDevicePlugin::OnGetPreferredAllocation(PreferredFn fn) {
  absl::MutexLock lock(&mu_);
  preferred_fn_ = std::move(fn);
}

int FakeDevicePlugin::open_streams() const { return streams_.OpenCount(); }

}  // namespace devmgr::testing
