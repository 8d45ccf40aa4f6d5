#include "deviceplugin/device_plugin_service.h"

#include <cassert>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "deviceplugin/preferred_allocation.h"

namespace devmgr::deviceplugin {
namespace {

std::shared_ptr<const v1beta1::ListAndWatchResponse> MakeSnapshot(const DeviceMap& devices) {
  auto snapshot = std::make_shared<v1beta1::ListAndWatchResponse>();
  snapshot->mutable_devices()->Reserve(static_cast<int>(devices.size()));
  for (const auto& [id, info] : devices) {
    v1beta1::Device* device = snapshot->add_devices();
    device->set_id(id);
    device->set_health(std::string(HealthString(info.health)));
    for (int64_t node : info.numa_nodes) device->mutable_topology()->add_nodes()->set_id(node);
  }
  return snapshot;
}

}  // namespace

// One open ListAndWatch. Its fields are guarded by the service's mu_ (one lock per service, no
// nesting); gRPC calls (StartWrite, Finish) are made with mu_ released.
class DevicePluginService::StreamReactor final
    : public grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse> {
 public:
  explicit StreamReactor(DevicePluginService& service) : service_(service) {}

  void OnWriteDone(bool ok) override {
    {
      absl::MutexLock lock(&service_.mu_);
      writing_ = false;
      in_flight_.reset();
      // A failed write means the stream is broken; end it.
      if (!ok && !finish_status_.has_value()) {
        finish_status_ = grpc::Status(grpc::StatusCode::UNAVAILABLE, "ListAndWatch write failed");
      }
    }
    service_.Pump(*this);
  }

  void OnCancel() override {
    {
      absl::MutexLock lock(&service_.mu_);
      if (!finish_status_.has_value()) finish_status_ = grpc::Status::CANCELLED;
    }
    service_.Pump(*this);
  }

  void OnDone() override { service_.OnStreamDone(this); }

  DevicePluginService& service_;
  std::shared_ptr<const v1beta1::ListAndWatchResponse> pending_;    // newest unsent snapshot
  std::shared_ptr<const v1beta1::ListAndWatchResponse> in_flight_;  // being written
  bool writing_ = false;
  std::optional<grpc::Status> finish_status_;  // set: Finish once no write is in flight
  bool finished_ = false;                      // Finish has been called
};

DevicePluginService::DevicePluginService(std::string device_type, const Hooks& hooks,
                                         std::optional<CdiOptions> cdi, EventLoop& hook_loop,
                                         LoggerPtr logger)
    : device_type_(std::move(device_type)),
      hooks_(hooks),
      cdi_(std::move(cdi)),
      hook_loop_(hook_loop),
      logger_(std::move(logger)),
      devices_(std::make_shared<DeviceMap>()),
      snapshot_(MakeSnapshot(DeviceMap())) {}

DevicePluginService::~DevicePluginService() {
  absl::MutexLock lock(&mu_);
  assert(streams_.empty());
}

v1beta1::DevicePluginOptions DevicePluginService::Options() const {
  v1beta1::DevicePluginOptions options;
  options.set_pre_start_required(hooks_.pre_starter != nullptr);
  options.set_get_preferred_allocation_available(hooks_.preferred_allocator != nullptr);
  return options;
}

void DevicePluginService::Update(std::shared_ptr<const DeviceMap> devices) {
  // Built before locking: with 100,000 devices this is the expensive part.
  std::shared_ptr<const v1beta1::ListAndWatchResponse> snapshot = MakeSnapshot(*devices);
  std::vector<StreamAction> actions;
  {
    absl::MutexLock lock(&mu_);
    devices_ = std::move(devices);
    snapshot_ = snapshot;
    for (StreamReactor* stream : streams_) {
      stream->pending_ = snapshot;  // an older unsent snapshot is obsolete
      actions.push_back(NextActionLocked(*stream));
    }
  }
  for (const StreamAction& action : actions) Run(action);
}

void DevicePluginService::FinishStreams() {
  std::vector<StreamAction> actions;
  {
    absl::MutexLock lock(&mu_);
    finishing_ = true;
    for (StreamReactor* stream : streams_) {
      if (!stream->finish_status_.has_value()) stream->finish_status_ = grpc::Status::OK;
      actions.push_back(NextActionLocked(*stream));
    }
  }
  for (const StreamAction& action : actions) Run(action);
}

void DevicePluginService::WaitForStreamsDone() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](std::set<StreamReactor*>* streams) { return streams->empty(); }, &streams_));
}

DevicePluginService::StreamAction DevicePluginService::NextActionLocked(StreamReactor& reactor) {
  StreamAction action;
  if (reactor.writing_ || reactor.finished_) return action;
  action.reactor = &reactor;
  if (reactor.finish_status_.has_value()) {
    reactor.finished_ = true;
    action.finish = reactor.finish_status_;
  } else if (reactor.pending_ != nullptr) {
    reactor.in_flight_ = std::move(reactor.pending_);
    reactor.writing_ = true;
    action.write = reactor.in_flight_.get();
  } else {
    action.reactor = nullptr;
  }
  return action;
}

void DevicePluginService::Run(const StreamAction& action) {
  if (action.reactor == nullptr) return;
  if (action.write != nullptr) {
    action.reactor->StartWrite(action.write);
  } else if (action.finish.has_value()) {
    action.reactor->Finish(*action.finish);
  }
}

void DevicePluginService::Pump(StreamReactor& reactor) {
  StreamAction action;
  {
    absl::MutexLock lock(&mu_);
    action = NextActionLocked(reactor);
  }
  Run(action);
}

void DevicePluginService::OnStreamDone(StreamReactor* reactor) {
  {
    absl::MutexLock lock(&mu_);
    streams_.erase(reactor);
  }
  DEVMGR_LOG(logger_, debug, "ListAndWatch stream closed", "deviceType", device_type_);
  delete reactor;  // NOLINT(cppcoreguidelines-owning-memory): callback reactors own themselves
}

std::shared_ptr<const DeviceMap> DevicePluginService::devices() const {
  absl::MutexLock lock(&mu_);
  return devices_;
}

grpc::ServerUnaryReactor* DevicePluginService::GetDevicePluginOptions(
    grpc::CallbackServerContext* context, const v1beta1::Empty* /*request*/,
    v1beta1::DevicePluginOptions* response) {
  *response = Options();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse>* DevicePluginService::ListAndWatch(
    grpc::CallbackServerContext* /*context*/, const v1beta1::Empty* /*request*/) {
  auto* reactor = new StreamReactor(*this);  // NOLINT: deletes itself in OnDone
  StreamAction action;
  {
    absl::MutexLock lock(&mu_);
    streams_.insert(reactor);
    if (finishing_) {
      reactor->finish_status_ =
          grpc::Status(grpc::StatusCode::UNAVAILABLE, "device plugin is stopping");
    } else {
      reactor->pending_ = snapshot_;  // the first message is the current full list
    }
    action = NextActionLocked(*reactor);
  }
  DEVMGR_LOG(logger_, debug, "ListAndWatch stream opened", "deviceType", device_type_);
  Run(action);
  return reactor;
}

absl::Status DevicePluginService::DefaultAllocate(const v1beta1::AllocateRequest& request,
                                                  v1beta1::AllocateResponse& response) const {
  std::shared_ptr<const DeviceMap> devices = this->devices();
  for (const v1beta1::ContainerAllocateRequest& container : request.container_requests()) {
    v1beta1::ContainerAllocateResponse* out = response.add_container_responses();
    for (const std::string& id : container.devices_ids()) {
      auto it = devices->find(id);
      if (it == devices->end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown device \"", id, "\" of type ", device_type_));
      }
      const DeviceInfo& info = it->second;
      if (info.health != Health::kHealthy) {
        return absl::FailedPreconditionError(absl::StrCat("device \"", id, "\" is unhealthy"));
      }
      for (const DeviceNode& node : info.nodes) {
        v1beta1::DeviceSpec* spec = out->add_devices();
        spec->set_host_path(node.host_path);
        spec->set_container_path(node.container_path.empty() ? node.host_path
                                                             : node.container_path);
        spec->set_permissions(node.permissions);
      }
      for (const Mount& mount : info.mounts) {
        v1beta1::Mount* m = out->add_mounts();
        m->set_host_path(mount.host_path);
        m->set_container_path(mount.container_path);
        m->set_read_only(mount.read_only);
      }
      for (const auto& [key, value] : info.envs) (*out->mutable_envs())[key] = value;
      for (const auto& [key, value] : info.annotations) (*out->mutable_annotations())[key] = value;
      if (cdi_.has_value())
        out->add_cdi_devices()->set_name(CdiDeviceName(*cdi_, device_type_, id));
    }
  }
  return absl::OkStatus();
}

absl::Status DevicePluginService::AllocateWithHooks(const v1beta1::AllocateRequest& request,
                                                    v1beta1::AllocateResponse& response) const {
  bool use_default = true;
  if (hooks_.allocator != nullptr) {
    HookResult<v1beta1::AllocateResponse> result =
        hooks_.allocator->Allocate(device_type_, request);
    if (!result.ok()) return result.status();
    if (result->has_value()) {
      response = **std::move(result);
      use_default = false;
    }
  }
  if (use_default) {
    absl::Status status = DefaultAllocate(request, response);
    if (!status.ok()) return status;
  }
  if (hooks_.post_allocator != nullptr) {
    return hooks_.post_allocator->PostAllocate(device_type_, response);
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* DevicePluginService::Allocate(grpc::CallbackServerContext* context,
                                                        const v1beta1::AllocateRequest* request,
                                                        v1beta1::AllocateResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (hooks_.allocator == nullptr && hooks_.post_allocator == nullptr) {
    // Only lookups in the tree: quick enough for a gRPC thread.
    absl::Status status = DefaultAllocate(*request, *response);
    if (!status.ok()) {
      DEVMGR_LOG(logger_, info, "Allocate failed", "deviceType", device_type_, "err", status);
    }
    reactor->Finish(ToGrpcStatus(status));
    return reactor;
  }
  // Hooks may block: run them off the gRPC threads. `request` and `response` live until Finish.
  hook_loop_.Post([this, reactor, request, response] {
    absl::Status status = AllocateWithHooks(*request, *response);
    if (!status.ok()) {
      DEVMGR_LOG(logger_, info, "Allocate failed", "deviceType", device_type_, "err", status);
    }
    reactor->Finish(ToGrpcStatus(status));
  });
  return reactor;
}

grpc::ServerUnaryReactor* DevicePluginService::GetPreferredAllocation(
    grpc::CallbackServerContext* context, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (hooks_.preferred_allocator == nullptr) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                 "this device plugin does not offer GetPreferredAllocation"));
    return reactor;
  }
  hook_loop_.Post([this, reactor, request, response] {
    HookResult<v1beta1::PreferredAllocationResponse> result =
        hooks_.preferred_allocator->GetPreferredAllocation(device_type_, *request);
    if (!result.ok()) {
      reactor->Finish(ToGrpcStatus(result.status()));
      return;
    }
    if (result->has_value()) {
      *response = **std::move(result);
    } else {
      std::shared_ptr<const DeviceMap> devices = this->devices();
      for (const auto& container : request->container_requests()) {
        v1beta1::ContainerPreferredAllocationResponse* out = response->add_container_responses();
        for (std::string& id : PreferNumaLocal(*devices, container)) {
          out->add_deviceids(std::move(id));
        }
      }
    }
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

grpc::ServerUnaryReactor* DevicePluginService::PreStartContainer(
    grpc::CallbackServerContext* context, const v1beta1::PreStartContainerRequest* request,
    v1beta1::PreStartContainerResponse* /*response*/) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (hooks_.pre_starter == nullptr) {
    // The kubelet calls it only when the options ask for it; answering OK is harmless.
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  hook_loop_.Post([this, reactor, request] {
    reactor->Finish(ToGrpcStatus(hooks_.pre_starter->PreStartContainer(device_type_, *request)));
  });
  return reactor;
}

}  // namespace devmgr::deviceplugin
