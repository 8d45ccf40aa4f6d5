#include "deviceplugin/device_plugin_service.h"

#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "deviceplugin/list_and_watch_bytes.h"
#include "deviceplugin/preferred_allocation.h"

namespace devmgr::deviceplugin {
namespace {

ListAndWatchStreams::Snapshot MakeSnapshot(const DeviceMap& devices) {
  return std::make_shared<const grpc::ByteBuffer>(ListAndWatchBytes(devices));
}

// DistinctInOrder keeps the distinct values added, in the order first added, by pointer: the
// values must outlive it. O(log n) per value, for containers that get thousands of devices.
template <typename T, typename Less>
class DistinctInOrder {
 public:
  void Add(const T& value) {
    if (seen_.insert(&value).second) order_.push_back(&value);
  }
  const std::vector<const T*>& values() const { return order_; }

 private:
  struct PointeeLess {
    bool operator()(const T* a, const T* b) const { return Less()(*a, *b); }
  };
  std::set<const T*, PointeeLess> seen_;
  std::vector<const T*> order_;
};

struct NodeLess {
  bool operator()(const DeviceNode& a, const DeviceNode& b) const {
    return std::tie(a.host_path, a.container_path, a.permissions) <
           std::tie(b.host_path, b.container_path, b.permissions);
  }
};

struct MountLess {
  bool operator()(const Mount& a, const Mount& b) const {
    return std::tie(a.host_path, a.container_path, a.read_only) <
           std::tie(b.host_path, b.container_path, b.read_only);
  }
};

// Per env or annotation name, its distinct values.
using MergedValues = std::map<std::string, DistinctInOrder<std::string, std::less<>>>;

std::string Joined(const DistinctInOrder<std::string, std::less<>>& values) {
  return absl::StrJoin(values.values(), ",",
                       [](std::string* out, const std::string* value) { out->append(*value); });
}

// MergeDevices fills one container's answer from the devices it gets, in request order. Devices
// of one type often share nodes and mounts (a GPU's control nodes): each is listed once. A name
// that several devices set in envs or annotations gets their distinct values joined with ','
// ("0,1"), as plugins that name their devices in one variable do; the container would otherwise
// see only one of them.
void MergeDevices(const std::vector<const DeviceInfo*>& infos,
                  v1beta1::ContainerAllocateResponse& out) {
  DistinctInOrder<DeviceNode, NodeLess> nodes;
  DistinctInOrder<Mount, MountLess> mounts;
  MergedValues envs;
  MergedValues annotations;
  for (const DeviceInfo* info : infos) {
    for (const DeviceNode& node : info->nodes) nodes.Add(node);
    for (const Mount& mount : info->mounts) mounts.Add(mount);
    for (const auto& [name, value] : info->envs) envs[name].Add(value);
    for (const auto& [name, value] : info->annotations) annotations[name].Add(value);
  }
  for (const DeviceNode* node : nodes.values()) {
    v1beta1::DeviceSpec* spec = out.add_devices();
    spec->set_host_path(node->host_path);
    spec->set_container_path(node->container_path.empty() ? node->host_path : node->container_path);
    spec->set_permissions(node->permissions);
  }
  for (const Mount* mount : mounts.values()) {
    v1beta1::Mount* m = out.add_mounts();
    m->set_host_path(mount->host_path);
    m->set_container_path(mount->container_path);
    m->set_read_only(mount->read_only);
  }
  for (const auto& [name, values] : envs) (*out.mutable_envs())[name] = Joined(values);
  for (const auto& [name, values] : annotations) {
    (*out.mutable_annotations())[name] = Joined(values);
  }
}

}  // namespace

DevicePluginService::DevicePluginService(std::string device_type, const Hooks& hooks,
                                         std::optional<CdiOptions> cdi, EventLoop& hook_loop,
                                         LoggerPtr logger)
    : device_type_(std::move(device_type)),
      hooks_(hooks),
      cdi_(std::move(cdi)),
      hook_loop_(hook_loop),
      logger_(std::move(logger)),
      devices_(std::make_shared<DeviceMap>()),
      streams_(MakeSnapshot(DeviceMap()), device_type_, logger_) {}

v1beta1::DevicePluginOptions DevicePluginService::Options() const {
  v1beta1::DevicePluginOptions options;
  options.set_pre_start_required(hooks_.pre_starter != nullptr);
  options.set_get_preferred_allocation_available(hooks_.preferred_allocator != nullptr);
  return options;
}

void DevicePluginService::Update(std::shared_ptr<const DeviceMap> devices) {
  // Built before locking: with 100,000 devices this is the expensive part.
  ListAndWatchStreams::Snapshot snapshot = MakeSnapshot(*devices);
  absl::MutexLock lock(&mu_);
  devices_ = std::move(devices);
  // Under mu_, so that concurrent updates reach the streams in the order devices_ takes them.
  // Publish takes only the streams' own lock and never calls back, so this cannot deadlock.
  streams_.Publish(std::move(snapshot));
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

grpc::ServerWriteReactor<grpc::ByteBuffer>* DevicePluginService::ListAndWatch(
    grpc::CallbackServerContext* /*context*/, const grpc::ByteBuffer* request) {
  return streams_.Open(*request);
}

absl::Status DevicePluginService::DefaultAllocate(const v1beta1::AllocateRequest& request,
                                                  v1beta1::AllocateResponse& response) const {
  std::shared_ptr<const DeviceMap> devices = this->devices();
  // A kind the CDI library refuses has no spec file (WriteCdiSpec refuses to write one).
  const bool cdi_names = cdi_.has_value() && IsValidCdiKind(CdiKind(*cdi_, device_type_));
  for (const v1beta1::ContainerAllocateRequest& container : request.container_requests()) {
    std::vector<const DeviceInfo*> infos;
    infos.reserve(static_cast<size_t>(container.devices_ids_size()));
    for (const std::string& id : container.devices_ids()) {
      auto it = devices->find(id);
      if (it == devices->end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown device \"", id, "\" of type ", device_type_));
      }
      if (it->second.health != Health::kHealthy) {
        return absl::FailedPreconditionError(absl::StrCat("device \"", id, "\" is unhealthy"));
      }
      infos.push_back(&it->second);
    }
    v1beta1::ContainerAllocateResponse* out = response.add_container_responses();
    MergeDevices(infos, *out);
    if (cdi_names) {
      for (size_t i = 0; i < infos.size(); ++i) {
        const std::string& id = container.devices_ids(static_cast<int>(i));
        if (!InCdiSpec(*cdi_, id, *infos[i])) continue;
        out->add_cdi_devices()->set_name(CdiDeviceName(*cdi_, device_type_, id));
      }
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

void DevicePluginService::RunHook(grpc::CallbackServerContext* context,
                                  grpc::ServerUnaryReactor* reactor,
                                  std::function<grpc::Status()> answer) {
  hook_loop_.Post([context, reactor, answer = std::move(answer)] {
    if (context->IsCancelled()) {
      // It ended while it waited behind a slower hook (the kubelet's deadline, the plugin's
      // stop): nobody reads the answer, so the hook is not asked.
      reactor->Finish(
          grpc::Status(grpc::StatusCode::CANCELLED, "the call ended before the plugin was asked"));
      return;
    }
    reactor->Finish(answer());
  });
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
  RunHook(context, reactor, [this, request, response] {
    absl::Status status = AllocateWithHooks(*request, *response);
    if (!status.ok()) {
      DEVMGR_LOG(logger_, info, "Allocate failed", "deviceType", device_type_, "err", status);
    }
    return ToGrpcStatus(status);
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
  RunHook(context, reactor, [this, request, response] {
    HookResult<v1beta1::PreferredAllocationResponse> result =
        hooks_.preferred_allocator->GetPreferredAllocation(device_type_, *request);
    if (!result.ok()) return ToGrpcStatus(result.status());
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
    return grpc::Status::OK;
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
  RunHook(context, reactor, [this, request] {
    return ToGrpcStatus(hooks_.pre_starter->PreStartContainer(device_type_, *request));
  });
  return reactor;
}

}  // namespace devmgr::deviceplugin
