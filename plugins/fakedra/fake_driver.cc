#include "plugins/fakedra/fake_driver.h"

#include <algorithm>
#include <chrono>
#include <system_error>
#include <type_traits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/errno_status.h"
#include "common/unix_socket.h"
#include "deviceplugin/cdi.h"
#include "deviceplugin/plugin.h"
#include "deviceplugin/registry_service.h"
#include "dra/api_versions.h"
#include "dra/health_stream.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "kubeletplugin/call_lock.h"
#include "kubeletplugin/socket_names.h"

namespace devmgr::plugins {
namespace {

namespace v1 = dra::draapi::v1;
namespace v1beta1 = dra::draapi::v1beta1;

// The plugin type a DRA driver registers with in plugins_registry/.
constexpr char kDraPluginType[] = "DRAPlugin";
constexpr char kDevicePrefix[] = "dev-";
// Upstream's limit on driver names (the same as for CSI drivers).
constexpr size_t kMaxDriverNameBytes = 63;

// The SDK's rule for a resource namespace is a DNS subdomain by contract, but it only checks the
// characters and both ends; a ".." inside would make an empty label.
bool IsDnsSubdomain(absl::string_view name) {
  return deviceplugin::IsValidNamespace(name) && !absl::StrContains(name, "..");
}

std::string DeviceName(int64_t index) { return absl::StrCat(kDevicePrefix, index); }

// The request of a result, without the subrequest a prioritized list chose ("gpu/large" is
// request "gpu"): the kubelet matches containers' claims by request, and upstream's helper
// strips the subrequest the same way before answering.
std::string BaseRequestName(absl::string_view request) {
  return std::string{request.substr(0, request.find('/'))};
}

deviceplugin::CdiOptions CdiOptionsFor(const FakeDraOptions& options) {
  return deviceplugin::CdiOptions{.folder = options.cdi_dir, .vendor = options.driver_name};
}

// The CDI spec's devices: each sets one environment variable, named after the driver and the
// device's index, to "<pool>/<device>", so that a container shows which devices it got; there is
// no hardware behind them to mount.
deviceplugin::DeviceMap CdiDevices(const FakeDraOptions& options) {
  std::string driver_env = absl::AsciiStrToUpper(options.driver_name);
  for (char& c : driver_env) {
    if (c == '.' || c == '-') c = '_';
  }
  deviceplugin::DeviceMap devices;
  for (int64_t i = 0; i < options.devices; ++i) {
    deviceplugin::DeviceInfo info;
    info.envs[absl::StrCat("DEVMGR_FAKE_DRA_", driver_env, "_", i)] =
        absl::StrCat(options.pool, "/", DeviceName(i));
    devices.emplace(DeviceName(i), std::move(info));
  }
  return devices;
}

// AsVersion moves a message into the same message of the other API version; within one
// version it is a plain copy.
template <typename To, typename From>
To AsVersion(const From& from) {
  if constexpr (std::is_same_v<To, From>) {
    return from;
  } else {
    return dra::ConvertVersion<To>(from);
  }
}

struct V1Api {
  using Service = v1::DRAPlugin::CallbackService;
  using PrepareRequest = v1::NodePrepareResourcesRequest;
  using PrepareResponse = v1::NodePrepareResourcesResponse;
  using UnprepareRequest = v1::NodeUnprepareResourcesRequest;
  using UnprepareResponse = v1::NodeUnprepareResourcesResponse;
};

struct V1beta1Api {
  using Service = v1beta1::DRAPlugin::CallbackService;
  using PrepareRequest = v1beta1::NodePrepareResourcesRequest;
  using PrepareResponse = v1beta1::NodePrepareResourcesResponse;
  using UnprepareRequest = v1beta1::NodeUnprepareResourcesRequest;
  using UnprepareResponse = v1beta1::NodeUnprepareResourcesResponse;
};

}  // namespace

bool IsValidDriverName(absl::string_view name) {
  return name.size() <= kMaxDriverNameBytes && IsDnsSubdomain(name);
}

// One version of the DRAPlugin service. The answers may block (claim lookups, injected latency
// and hangs), so each call is handed to the worker thread, which finishes it.
template <typename Api>
class FakeDraDriver::DraService final : public Api::Service {
 public:
  explicit DraService(FakeDraDriver& driver) : driver_(driver) {}

  grpc::ServerUnaryReactor* NodePrepareResources(grpc::CallbackServerContext* context,
                                                 const typename Api::PrepareRequest* request,
                                                 typename Api::PrepareResponse* response) override {
    // `request` and `response` live until Finish.
    return AnswerOnWorker(context, [this, request, response] {
      *response = AsVersion<typename Api::PrepareResponse>(
          driver_.Prepare(AsVersion<v1::NodePrepareResourcesRequest>(*request)));
    });
  }

  grpc::ServerUnaryReactor* NodeUnprepareResources(
      grpc::CallbackServerContext* context, const typename Api::UnprepareRequest* request,
      typename Api::UnprepareResponse* response) override {
    return AnswerOnWorker(context, [this, request, response] {
      *response = AsVersion<typename Api::UnprepareResponse>(
          driver_.Unprepare(AsVersion<v1::NodeUnprepareResourcesRequest>(*request)));
    });
  }

 private:
  grpc::ServerUnaryReactor* AnswerOnWorker(grpc::CallbackServerContext* context,
                                           std::function<void()> answer) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    driver_.worker_.Post([&driver = driver_, reactor, answer = std::move(answer)] {
      // In a rolling update the other instance of the driver may be in a call: take turns.
      absl::StatusOr<kubeletplugin::CallLock::Guard> turn = driver.call_lock_.Lock();
      if (!turn.ok()) {
        reactor->Finish(
            grpc::Status(grpc::StatusCode::UNKNOWN, std::string(turn.status().message())));
        return;
      }
      answer();
      reactor->Finish(grpc::Status::OK);
    });
    return reactor;
  }

  FakeDraDriver& driver_;
};

FakeDraDriver::FakeDraDriver(FakeDraOptions options)
    : options_(std::move(options)),
      service_socket_(
          options_.root_dir / "plugins" / options_.driver_name /
          (options_.rolling_update_uid.empty()
               ? std::string(kubeletplugin::kServiceSocketFile)
               : kubeletplugin::RollingUpdateServiceSocketFile(options_.rolling_update_uid))),
      registrar_socket_(options_.root_dir / "plugins_registry" /
                        (options_.rolling_update_uid.empty()
                             ? kubeletplugin::RegistrarSocketFile(options_.driver_name)
                             : kubeletplugin::RollingUpdateRegistrarSocketFile(
                                   options_.root_dir / "plugins_registry", options_.driver_name,
                                   options_.rolling_update_uid))),
      call_lock_(options_.rolling_update_uid.empty()
                     ? std::filesystem::path()
                     : service_socket_.parent_path() / kubeletplugin::kSerializeLockFile) {}

bool IsValidPodUid(absl::string_view uid) {
  return !uid.empty() && uid.size() <= 63 && std::all_of(uid.begin(), uid.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-';
  });
}

absl::StatusOr<std::unique_ptr<FakeDraDriver>> FakeDraDriver::Start(FakeDraOptions options) {
  if (!IsValidDriverName(options.driver_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid DRA driver name \"", options.driver_name,
                     "\": want a DNS subdomain of at most 63 characters like gpu.example.com"));
  }
  if (!options.rolling_update_uid.empty() && !IsValidPodUid(options.rolling_update_uid)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid pod UID \"", options.rolling_update_uid,
                     "\" for a rolling update: want letters, digits and '-' like "
                     "11111111-2222-3333-4444-555555555555"));
  }
  if (!IsDnsSubdomain(options.pool)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid pool (node) name \"", options.pool,
                                                   "\": want a DNS subdomain like node-1"));
  }
  if (options.devices < 0) {
    return absl::InvalidArgumentError("the number of devices must not be negative");
  }
  if (!options.serve_v1 && !options.serve_v1beta1) {
    return absl::InvalidArgumentError("serve at least one of DRAPlugin v1 and v1beta1");
  }
  if (options.prepare_latency < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("the prepare latency must not be negative");
  }
  if (!options.claim_lookup) {
    return absl::InvalidArgumentError("a claim lookup is required");
  }
  // The endpoint in GetInfo must be absolute: the kubelet dials it from its own folder.
  std::error_code ec;
  std::filesystem::path root = std::filesystem::absolute(options.root_dir, ec);
  if (ec) return ErrnoStatus(ec, "cannot resolve", options.root_dir);
  options.root_dir = root.lexically_normal();

  std::unique_ptr<FakeDraDriver> driver(new FakeDraDriver(std::move(options)));
  if (absl::Status published = driver->StartPublishing(); !published.ok()) return published;
  absl::Status served = driver->Serve();
  if (!served.ok()) {
    driver->Stop();
    return served;
  }
  return driver;
}

resourceslice::DriverResources FakeDraDriver::Resources() const {
  constexpr int64_t kDevicesPerSlice = 128;
  resourceslice::Pool pool;
  for (int64_t index = 0; index < options_.devices; ++index) {
    if (index % kDevicesPerSlice == 0) pool.slices.emplace_back();
    kubeapi::Device device;
    device.name = absl::StrCat(kDevicePrefix, index);
    device.extra["attributes"] = {{"index", {{"int", index}}}};
    pool.slices.back().devices.push_back(std::move(device));
  }
  // A driver without devices still publishes its (empty) pool: it is up, with nothing to offer.
  if (pool.slices.empty()) pool.slices.emplace_back();
  resourceslice::DriverResources resources;
  resources.pools[options_.pool] = std::move(pool);
  return resources;
}

absl::Status FakeDraDriver::StartPublishing() {
  if (options_.slice_store == nullptr) return absl::OkStatus();
  resourceslice::ControllerOptions publish;
  publish.driver_name = options_.driver_name;
  publish.store = options_.slice_store;
  publish.owner = resourceslice::Owner{"v1", "Node", options_.pool, ""};
  publish.resources = Resources();
  publish.logger = options_.logger;
  absl::StatusOr<std::unique_ptr<resourceslice::Controller>> controller =
      resourceslice::Controller::Start(std::move(publish));
  if (!controller.ok()) return controller.status();
  publisher_ = *std::move(controller);
  return absl::OkStatus();
}

FakeDraDriver::~FakeDraDriver() { Stop(); }

absl::Status FakeDraDriver::Serve() {
  for (const std::filesystem::path& socket : {service_socket_, registrar_socket_}) {
    absl::Status path_ok = ValidateSocketPath(socket);
    if (!path_ok.ok()) return path_ok;
  }
  for (const std::filesystem::path& socket : {service_socket_, registrar_socket_}) {
    std::error_code ec;
    std::filesystem::create_directories(socket.parent_path(), ec);
    if (ec) return ErrnoStatus(ec, "cannot create", socket.parent_path());
    absl::Status removed = RemoveStaleSocket(socket);
    if (!removed.ok()) return removed;
  }
  if (!options_.cdi_dir.empty()) {
    absl::Status written =
        deviceplugin::WriteCdiSpec(CdiOptionsFor(options_), kFakeDraCdiClass, CdiDevices(options_));
    if (!written.ok()) return written;
    cdi_written_ = true;
  }

  pluginregistration::PluginInfo info;
  info.set_type(kDraPluginType);
  info.set_name(options_.driver_name);
  info.set_endpoint(service_socket_.string());
  grpc::ServerBuilder service_builder;
  service_builder.AddListeningPort(UnixTarget(service_socket_), grpc::InsecureServerCredentials());
  if (options_.serve_v1) {
    services_.push_back(std::make_unique<DraService<V1Api>>(*this));
    service_builder.RegisterService(services_.back().get());
    info.add_supported_versions(dra::kDraPluginServiceV1);
  }
  if (options_.serve_v1beta1) {
    services_.push_back(std::make_unique<DraService<V1beta1Api>>(*this));
    service_builder.RegisterService(services_.back().get());
    info.add_supported_versions(dra::kDraPluginServiceV1beta1);
  }
  if (options_.serve_health) {
    auto health = std::make_unique<FakeDeviceHealth>(options_.pool, options_.devices);
    health_ = health.get();
    services_.push_back(std::move(health));
    service_builder.RegisterService(services_.back().get());
    info.add_supported_versions(dra::kDraResourceHealthServiceV1);
  }
  service_server_ = service_builder.BuildAndStart();
  if (service_server_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", service_socket_.string()));
  }

  // Only now that the service answers does the kubelet learn about it.
  services_.push_back(std::make_unique<deviceplugin::RegistryService>(
      std::move(info), [this](bool registered, const std::string& error) {
        OnRegistrationStatus(registered, error);
      }));
  grpc::ServerBuilder registrar_builder;
  registrar_builder.AddListeningPort(UnixTarget(registrar_socket_),
                                     grpc::InsecureServerCredentials());
  registrar_builder.RegisterService(services_.back().get());
  registrar_server_ = registrar_builder.BuildAndStart();
  if (registrar_server_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", registrar_socket_.string()));
  }
  DEVMGR_LOG(options_.logger, info, "Serving DRA driver", "driverName", options_.driver_name,
             "endpoint", service_socket_.string(), "registrar", registrar_socket_.string(),
             "devices", options_.devices, "pool", options_.pool);
  return absl::OkStatus();
}

void FakeDraDriver::FlipHealth() {
  if (health_ != nullptr) health_->Flip();
}

void FakeDraDriver::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  Release();
  if (publisher_ != nullptr) publisher_->Stop();
  if (health_ != nullptr) health_->Shutdown();
  const bool served = service_server_ != nullptr;
  const auto deadline =
      std::chrono::system_clock::now() + absl::ToChronoMilliseconds(options_.shutdown_grace);
  // The registrar first: a kubelet looking now finds no driver rather than a dying one. Each
  // socket is removed only if this driver bound it.
  for (auto* server : {&registrar_server_, &service_server_}) {
    if (*server == nullptr) continue;
    // Calls still on the worker end there (nothing hangs after Release), which Shutdown waits
    // for: so the worker runs until both servers are down.
    (*server)->Shutdown(deadline);
    server->reset();
    const std::filesystem::path& socket =
        server == &registrar_server_ ? registrar_socket_ : service_socket_;
    if (absl::Status removed = RemoveStaleSocket(socket); !removed.ok()) {
      DEVMGR_LOG(options_.logger, err, "Cannot remove socket", "path", socket.string(), "err",
                 removed);
    }
  }
  worker_.Stop();
  if (cdi_written_) {
    absl::Status removed = deviceplugin::RemoveCdiSpec(CdiOptionsFor(options_), kFakeDraCdiClass);
    if (!removed.ok()) {
      DEVMGR_LOG(options_.logger, err, "Cannot remove CDI spec", "err", removed);
    }
  }
  if (served) {
    DEVMGR_LOG(options_.logger, info, "DRA driver stopped", "driverName", options_.driver_name);
  }
}

void FakeDraDriver::Release() {
  if (!released_.HasBeenNotified()) released_.Notify();
}

std::filesystem::path FakeDraDriver::CdiSpecPath() const {
  if (options_.cdi_dir.empty()) return {};
  return options_.cdi_dir /
         deviceplugin::CdiSpecFileName(CdiOptionsFor(options_), kFakeDraCdiClass);
}

std::string FakeDraDriver::CdiDeviceId(absl::string_view device) const {
  return deviceplugin::CdiDeviceName(CdiOptionsFor(options_), kFakeDraCdiClass, device);
}

std::vector<std::string> FakeDraDriver::PreparedClaims() const {
  absl::MutexLock lock(&mu_);
  return std::vector<std::string>(prepared_.begin(), prepared_.end());
}

FakeDraRegistration FakeDraDriver::registration() const {
  absl::MutexLock lock(&mu_);
  return registration_;
}

void FakeDraDriver::OnRegistrationStatus(bool registered, const std::string& error) {
  {
    absl::MutexLock lock(&mu_);
    ++registration_.notifications;
    registration_.registered = registered;
    registration_.error = error;
  }
  DEVMGR_LOG(options_.logger, info, "Registration status from the kubelet", "driverName",
             options_.driver_name, "registered", registered, "err", error);
  // A kubelet that (re)starts wipes the node's slices: publish them again.
  if (registered && publisher_ != nullptr) publisher_->Resync();
}

bool FakeDraDriver::IsOwnDevice(absl::string_view pool, absl::string_view device) const {
  int64_t index = 0;
  return pool == options_.pool && absl::ConsumePrefix(&device, kDevicePrefix) &&
         absl::SimpleAtoi(device, &index) && index >= 0 && index < options_.devices &&
         // No other spelling of the same number ("dev-01", "dev-+1").
         device == absl::StrCat(index);
}

absl::StatusOr<std::vector<v1::Device>> FakeDraDriver::PrepareClaim(const v1::Claim& claim) const {
  const std::string ref = absl::StrCat(claim.namespace_(), "/", claim.name());
  absl::StatusOr<dra::ResourceClaim> found =
      options_.claim_lookup(claim.namespace_(), claim.name());
  // Upstream's helper fails the whole call when one claim cannot be used; the fake answers per
  // claim, so that a test sees each claim's reason. The texts are the helper's.
  if (!found.ok()) {
    return absl::Status(found.status().code(),
                        absl::StrCat("retrieve claim ", ref, ": ", found.status().message()));
  }
  if (!found->allocation.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat("claim ", ref, " not allocated"));
  }
  if (found->uid != claim.uid()) {
    // Same name, other object: the claim the kubelet means was deleted and made again.
    return absl::FailedPreconditionError(absl::StrCat("claim ", ref, " got replaced"));
  }
  std::vector<v1::Device> devices;
  for (const dra::DeviceRequestAllocationResult& result : *found->allocation) {
    if (result.driver != options_.driver_name) continue;
    if (!IsOwnDevice(result.pool, result.device)) {
      return absl::NotFoundError(absl::StrCat("claim ", ref, ": device ", result.pool, "/",
                                              result.device, " is not one of DRA driver ",
                                              options_.driver_name, "'s devices"));
    }
    v1::Device& device = devices.emplace_back();
    device.add_request_names(BaseRequestName(result.request));
    device.set_pool_name(result.pool);
    device.set_device_name(result.device);
    device.add_cdi_device_ids(CdiDeviceId(result.device));
    if (result.share_id.has_value()) device.set_share_id(*result.share_id);
  }
  return devices;
}

v1::NodePrepareResourcesResponse FakeDraDriver::Prepare(
    const v1::NodePrepareResourcesRequest& request) {
  ++prepare_calls_;
  if (options_.prepare_latency > absl::ZeroDuration()) {
    released_.WaitForNotificationWithTimeout(options_.prepare_latency);
  }
  if (options_.prepare_hang) released_.WaitForNotification();
  v1::NodePrepareResourcesResponse response;
  for (const v1::Claim& claim : request.claims()) {
    v1::NodePrepareResourceResponse& answer = (*response.mutable_claims())[claim.uid()];
    absl::StatusOr<std::vector<v1::Device>> devices =
        options_.prepare_error.empty() ? PrepareClaim(claim)
                                       : absl::InternalError(options_.prepare_error);
    const std::string ref = absl::StrCat(claim.namespace_(), "/", claim.name());
    if (!devices.ok()) {
      answer.set_error(std::string{devices.status().message()});
      DEVMGR_LOG(options_.logger, info, "Cannot prepare claim", "claim", ref, "claimUID",
                 claim.uid(), "err", devices.status());
      continue;
    }
    std::vector<std::string> names;
    for (v1::Device& device : *devices) {
      names.push_back(absl::StrCat(device.pool_name(), "/", device.device_name()));
      *answer.add_devices() = std::move(device);
    }
    {
      absl::MutexLock lock(&mu_);
      prepared_.insert(claim.uid());
    }
    DEVMGR_LOG(options_.logger, info, "Prepared claim", "claim", ref, "claimUID", claim.uid(),
               "devices", names);
  }
  return response;
}

v1::NodeUnprepareResourcesResponse FakeDraDriver::Unprepare(
    const v1::NodeUnprepareResourcesRequest& request) {
  ++unprepare_calls_;
  // Not prepared is no error: the kubelet repeats unprepare after a restart.
  v1::NodeUnprepareResourcesResponse response;
  for (const v1::Claim& claim : request.claims()) {
    (*response.mutable_claims())[claim.uid()];
    {
      absl::MutexLock lock(&mu_);
      prepared_.erase(claim.uid());
    }
    DEVMGR_LOG(options_.logger, info, "Unprepared claim", "claim",
               absl::StrCat(claim.namespace_(), "/", claim.name()), "claimUID", claim.uid());
  }
  return response;
}

}  // namespace devmgr::plugins
