#include "plugins/fakedra/fake_driver.h"

#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/errno_status.h"
#include "common/k8s_names.h"
#include "deviceplugin/cdi.h"
#include "deviceplugin/plugin.h"
#include "dra/health_stream.h"
#include "kubeletplugin/socket_names.h"

namespace devmgr::plugins {
namespace {

constexpr char kDevicePrefix[] = "dev-";
// The API's limit on devices in one ResourceSlice.
constexpr int64_t kDevicesPerSlice = 128;

bool IsDnsSubdomain(absl::string_view name) { return Dns1123SubdomainErrors(name).empty(); }

std::string DeviceName(int64_t index) { return absl::StrCat(kDevicePrefix, index); }

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

}  // namespace

FakeDraDriver::FakeDraDriver(FakeDraOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<FakeDraDriver>> FakeDraDriver::Start(FakeDraOptions options) {
  // Checked before the CDI spec, named after the driver, is written.
  if (absl::Status named =
          kubeletplugin::CheckNames(options.driver_name, options.rolling_update_uid);
      !named.ok()) {
    return named;
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
  std::unique_ptr<FakeDraDriver> driver(new FakeDraDriver(std::move(options)));
  const FakeDraOptions& opts = driver->options_;
  if (!opts.cdi_dir.empty()) {
    absl::Status written =
        deviceplugin::WriteCdiSpec(CdiOptionsFor(opts), kFakeDraCdiClass, CdiDevices(opts));
    if (!written.ok()) return written;
    driver->cdi_written_ = true;
  }
  kubeletplugin::HelperOptions helper;
  helper.driver_name = opts.driver_name;
  helper.kubelet_dir = opts.root_dir;
  helper.rolling_update_uid = opts.rolling_update_uid;
  helper.serve_v1 = opts.serve_v1;
  helper.serve_v1beta1 = opts.serve_v1beta1;
  helper.serve_registration = opts.serve_registration;
  helper.serve_service = opts.serve_service;
  if (opts.serve_health) {
    driver->health_ =
        std::make_unique<FakeDeviceHealth>(opts.pool, opts.devices, opts.health_report_interval);
    helper.extra_services.emplace_back(driver->health_.get(), dra::kDraResourceHealthServiceV1);
    helper.extra_services.emplace_back(&driver->health_->v1alpha1(),
                                       dra::kDraResourceHealthServiceV1alpha1);
  }
  helper.claim_lookup = opts.claim_lookup;
  helper.slice_store = opts.slice_store;
  helper.node_name = opts.pool;
  helper.on_registration = [d = driver.get()](bool registered, const std::string& error) {
    d->OnRegistrationStatus(registered, error);
  };
  helper.shutdown_grace = opts.shutdown_grace;
  helper.logger = opts.logger;
  absl::StatusOr<std::unique_ptr<kubeletplugin::Helper>> started =
      kubeletplugin::Helper::Start(*driver, std::move(helper));
  if (!started.ok()) {
    driver->Stop();
    return started.status();
  }
  driver->helper_ = *std::move(started);
  if (opts.slice_store != nullptr && opts.serve_service) {
    if (absl::Status published = driver->helper_->PublishResources(driver->Resources());
        !published.ok()) {
      driver->Stop();
      return published;
    }
  }
  DEVMGR_LOG(opts.logger, info, "Serving DRA driver", "driverName", opts.driver_name, "endpoint",
             driver->service_socket().string(), "registrar", driver->registrar_socket().string(),
             "devices", opts.devices, "pool", opts.pool);
  return driver;
}

resourceslice::DriverResources FakeDraDriver::Resources() const {
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

FakeDraDriver::~FakeDraDriver() { Stop(); }

void FakeDraDriver::Stop() {
  stop_once_.Run([this] { StopNow(); });
}

void FakeDraDriver::StopNow() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  Release();
  if (health_ != nullptr) health_->Shutdown();
  const bool served = helper_ != nullptr;
  if (helper_ != nullptr) helper_->Stop();
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

void FakeDraDriver::FlipHealth() {
  if (health_ != nullptr) health_->Flip();
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
}

bool FakeDraDriver::IsOwnDevice(absl::string_view pool, absl::string_view device) const {
  int64_t index = 0;
  return pool == options_.pool && absl::ConsumePrefix(&device, kDevicePrefix) &&
         absl::SimpleAtoi(device, &index) && index >= 0 && index < options_.devices &&
         // No other spelling of the same number ("dev-01", "dev-+1").
         device == absl::StrCat(index);
}

absl::StatusOr<std::vector<kubeletplugin::Device>> FakeDraDriver::PrepareClaim(
    const dra::ResourceClaim& claim) const {
  std::vector<kubeletplugin::Device> devices;
  for (const dra::DeviceRequestAllocationResult& result :
       claim.allocation.value_or(std::vector<dra::DeviceRequestAllocationResult>{})) {
    if (result.driver != options_.driver_name) continue;
    if (!IsOwnDevice(result.pool, result.device)) {
      return absl::NotFoundError(absl::StrCat(
          "claim ", claim.namespace_name, "/", claim.name, ": device ", result.pool, "/",
          result.device, " is not one of DRA driver ", options_.driver_name, "'s devices"));
    }
    devices.push_back(kubeletplugin::Device{.requests = {result.request},
                                            .pool_name = result.pool,
                                            .device_name = result.device,
                                            .cdi_device_ids = {CdiDeviceId(result.device)},
                                            .share_id = result.share_id});
  }
  return devices;
}

absl::StatusOr<std::map<std::string, kubeletplugin::PrepareResult>>
FakeDraDriver::PrepareResourceClaims(const std::vector<dra::ResourceClaim>& claims) {
  ++prepare_calls_;
  if (options_.prepare_latency > absl::ZeroDuration()) {
    released_.WaitForNotificationWithTimeout(options_.prepare_latency);
  }
  if (options_.prepare_hang) released_.WaitForNotification();
  std::map<std::string, kubeletplugin::PrepareResult> results;
  for (const dra::ResourceClaim& claim : claims) {
    kubeletplugin::PrepareResult& result = results[claim.uid];
    const std::string ref = absl::StrCat(claim.namespace_name, "/", claim.name);
    absl::StatusOr<std::vector<kubeletplugin::Device>> devices =
        options_.prepare_error.empty() ? PrepareClaim(claim)
                                       : absl::InternalError(options_.prepare_error);
    if (!devices.ok()) {
      result.error = devices.status();
      DEVMGR_LOG(options_.logger, info, "Cannot prepare claim", "claim", ref, "claimUID", claim.uid,
                 "err", devices.status());
      continue;
    }
    std::vector<std::string> names;
    for (const kubeletplugin::Device& device : *devices) {
      names.push_back(absl::StrCat(device.pool_name, "/", device.device_name));
    }
    // The opaque parameters the allocation gives this driver, as a driver would read them.
    std::vector<std::string> config;
    for (const dra::DeviceAllocationConfiguration& item : claim.allocation_config) {
      if (item.driver == options_.driver_name) config.push_back(item.parameters);
    }
    result.devices = *std::move(devices);
    {
      absl::MutexLock lock(&mu_);
      prepared_.insert(claim.uid);
    }
    DEVMGR_LOG(options_.logger, info, "Prepared claim", "claim", ref, "claimUID", claim.uid,
               "devices", names, "config", config);
  }
  return results;
}

absl::StatusOr<std::map<std::string, absl::Status>> FakeDraDriver::UnprepareResourceClaims(
    const std::vector<kubeletplugin::NamespacedObject>& claims) {
  ++unprepare_calls_;
  // Not prepared is no error: the kubelet repeats unprepare after a restart.
  std::map<std::string, absl::Status> results;
  for (const kubeletplugin::NamespacedObject& claim : claims) {
    const std::string ref = absl::StrCat(claim.namespace_name, "/", claim.name);
    if (!options_.unprepare_error.empty()) {
      results[claim.uid] = absl::InternalError(options_.unprepare_error);
      DEVMGR_LOG(options_.logger, info, "Cannot unprepare claim", "claim", ref, "claimUID",
                 claim.uid, "err", results[claim.uid]);
      continue;
    }
    results[claim.uid] = absl::OkStatus();
    {
      absl::MutexLock lock(&mu_);
      prepared_.erase(claim.uid);
    }
    DEVMGR_LOG(options_.logger, info, "Unprepared claim", "claim", ref, "claimUID", claim.uid);
  }
  return results;
}

}  // namespace devmgr::plugins
