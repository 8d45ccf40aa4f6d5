#include "tests/testlib/fake_device_plugin.h"

#include <optional>
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

// One ListAndWatch stream. Decisions are taken under the stream's mutex and the gRPC calls
// (StartWrite, Finish) made after releasing it, so a reaction that gRPC runs inline cannot
// deadlock on it. Owned by FakeDevicePlugin::streams_ until OnDone.
class FakeDevicePlugin::Stream final
    : public grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse> {
 public:
  explicit Stream(FakeDevicePlugin& plugin) : plugin_(plugin) {}

  void Push(v1beta1::ListAndWatchResponse snapshot) {
    {
      absl::MutexLock lock(&mu_);
      pending_ = std::move(snapshot);  // an older unsent snapshot is obsolete
      if (writing_ || finished_) return;
      writing_ = true;
      in_flight_ = *std::exchange(pending_, std::nullopt);
    }
    StartWrite(&in_flight_);
  }

  // End finishes the stream with OK once any write in flight is done.
  void End() { EndWith(grpc::Status::OK); }

  void OnWriteDone(bool ok) override {
    enum class Next { kNothing, kWrite, kFinish } next = Next::kNothing;
    grpc::Status finish_status;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok || end_status_.has_value()) {
        if (!finished_) {
          finished_ = true;
          next = Next::kFinish;
          finish_status =
              ok ? *end_status_ : grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed");
        }
      } else if (pending_.has_value()) {
        writing_ = true;
        in_flight_ = *std::exchange(pending_, std::nullopt);
        next = Next::kWrite;
      }
    }
    if (next == Next::kWrite) StartWrite(&in_flight_);
    if (next == Next::kFinish) Finish(finish_status);
  }

  void OnCancel() override { EndWith(grpc::Status::CANCELLED); }

  void OnDone() override {
    std::shared_ptr<Stream> self;
    {
      absl::MutexLock lock(&plugin_.mu_);
      auto it = plugin_.streams_.find(this);
      self = std::move(it->second);
      plugin_.streams_.erase(it);
    }
    // `self` may be the last reference: nothing touches `this` after it goes.
  }

 private:
  void EndWith(const grpc::Status& status) {
    {
      absl::MutexLock lock(&mu_);
      if (!end_status_.has_value()) end_status_ = status;
      if (writing_ || finished_) return;
      finished_ = true;
    }
    Finish(status);
  }

  FakeDevicePlugin& plugin_;
  absl::Mutex mu_;
  std::optional<v1beta1::ListAndWatchResponse> pending_ ABSL_GUARDED_BY(mu_);
  // Only the writer touches it, between StartWrite and OnWriteDone.
  v1beta1::ListAndWatchResponse in_flight_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> end_status_ ABSL_GUARDED_BY(mu_);
};

class FakeDevicePlugin::Service final : public v1beta1::DevicePlugin::CallbackService {
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

  grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse>* ListAndWatch(
      grpc::CallbackServerContext* /*context*/, const v1beta1::Empty* /*request*/) override {
    ++plugin_.list_and_watch_calls_;
    auto stream = std::make_shared<Stream>(plugin_);
    v1beta1::ListAndWatchResponse first;
    bool stopping = false;
    {
      absl::MutexLock lock(&plugin_.mu_);
      stopping = plugin_.stopping_;
      plugin_.streams_[stream.get()] = stream;
      first = plugin_.SnapshotLocked();
    }
    if (stopping) {
      stream->End();
    } else {
      stream->Push(std::move(first));
    }
    return stream.get();
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
      devices_(std::move(devices)),
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
  std::vector<std::shared_ptr<Stream>> streams;
  std::vector<grpc::ServerUnaryReactor*> hung;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    streams = StreamsLocked();
    hung.swap(hung_calls_);
  }
  for (auto& stream : streams) stream->End();
  for (grpc::ServerUnaryReactor* reactor : hung) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "plugin stopped"));
  }
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
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

v1beta1::ListAndWatchResponse FakeDevicePlugin::SnapshotLocked() const {
  v1beta1::ListAndWatchResponse snapshot;
  snapshot.mutable_devices()->Reserve(static_cast<int>(devices_.size()));
  for (const auto& device : devices_) *snapshot.add_devices() = device;
  return snapshot;
}

std::vector<std::shared_ptr<FakeDevicePlugin::Stream>> FakeDevicePlugin::StreamsLocked() const {
  std::vector<std::shared_ptr<Stream>> streams;
  streams.reserve(streams_.size());
  for (const auto& [raw, stream] : streams_) streams.push_back(stream);
  return streams;
}

void FakeDevicePlugin::SetDevices(std::vector<v1beta1::Device> devices) {
  std::vector<std::shared_ptr<Stream>> streams;
  v1beta1::ListAndWatchResponse snapshot;
  {
    absl::MutexLock lock(&mu_);
    devices_ = std::move(devices);
    snapshot = SnapshotLocked();
    streams = StreamsLocked();
  }
  // Outside mu_: a reaction that gRPC runs inline may take it (OnDone).
  for (auto& stream : streams) stream->Push(snapshot);
}

void FakeDevicePlugin::EndStreams() {
  std::vector<std::shared_ptr<Stream>> streams;
  {
    absl::MutexLock lock(&mu_);
    streams = StreamsLocked();
  }
  for (auto& stream : streams) stream->End();
}

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

int FakeDevicePlugin::open_streams() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(streams_.size());
}

}  // namespace devmgr::testing
