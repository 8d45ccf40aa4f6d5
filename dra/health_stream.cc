#include "dra/health_stream.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "common/channel_reconnect.h"
#include "common/plugin_channel.h"
#include "common/status.h"
#include "dra-health/v1/api.grpc.pb.h"
#include "dra-health/v1alpha1/api.grpc.pb.h"
#include "dra/api_versions.h"

namespace devmgr::dra {

std::string PickHealthService(const std::vector<std::string>& supported_versions) {
  for (const char* service : {kDraResourceHealthServiceV1, kDraResourceHealthServiceV1alpha1}) {
    if (std::find(supported_versions.begin(), supported_versions.end(), service) !=
        supported_versions.end()) {
      return service;
    }
  }
  return "";
}

DeviceHealthStatus ToDeviceHealthStatus(healthapi::HealthStatus health) {
  switch (health) {
    case healthapi::HEALTHY:
      return DeviceHealthStatus::kHealthy;
    case healthapi::UNHEALTHY:
      return DeviceHealthStatus::kUnhealthy;
    default:
      return DeviceHealthStatus::kUnknown;
  }
}

DeviceHealth BuildDeviceHealth(const healthapi::DeviceHealth& device, absl::string_view driver_name,
                               const LoggerPtr& logger) {
  DeviceHealth health;
  health.pool_name = device.device().pool_name();
  health.device_name = device.device().device_name();
  health.health = ToDeviceHealthStatus(device.health());
  // HealthCache::Update replaces it with the time the report arrived.
  health.last_updated = absl::FromUnixSeconds(device.last_updated_time());
  const int64_t timeout_seconds = device.health_check_timeout_seconds();
  health.health_check_timeout =
      timeout_seconds > 0 ? absl::Seconds(timeout_seconds) : kDefaultHealthTimeout;
  if (timeout_seconds < 0) {
    DEVMGR_LOG(logger, debug, "Ignoring negative health check timeout, using default", "pluginName",
               driver_name, "poolName", health.pool_name, "deviceName", health.device_name,
               "providedTimeout", timeout_seconds, "defaultTimeout", kDefaultHealthTimeout);
  }
  health.message = device.message();
  return health;
}

std::vector<DeviceHealth> BuildDeviceHealths(const healthapi::NodeWatchResourcesResponse& response,
                                             absl::string_view driver_name,
                                             const LoggerPtr& logger) {
  std::vector<DeviceHealth> devices;
  devices.reserve(response.devices_size());
  for (const healthapi::DeviceHealth& device : response.devices()) {
    devices.push_back(BuildDeviceHealth(device, driver_name, logger));
  }
  return devices;
}

HealthStream::HealthStream(HealthStreamOptions options)
    : options_(std::move(options)),
      channel_(options_.channel != nullptr ? options_.channel : PluginChannel(options_.endpoint)),
      thread_([this] { Run(); }) {}

HealthStream::~HealthStream() { Stop(); }

void HealthStream::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    // Ends the blocking read at once; the thread sees Cancelled.
    if (context_ != nullptr) context_->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
}

void HealthStream::StopQuietly() {
  {
    absl::MutexLock lock(&mu_);
    quiet_ = true;
  }
  Stop();
}

int64_t HealthStream::tries() const {
  absl::MutexLock lock(&mu_);
  return tries_;
}

bool HealthStream::finished() const {
  absl::MutexLock lock(&mu_);
  return finished_;
}

void HealthStream::Run() {
  for (;;) {
    std::optional<HealthStreamEnd> tried = RunOnce();
    if (!tried.has_value()) break;
    const HealthStreamEnd& end = *tried;
    const bool unimplemented = absl::IsUnimplemented(end.status);
    if (unimplemented) {
      // Expected from a driver that registers the service without serving it: not an error,
      // and trying again would only repeat the answer every few seconds.
      DEVMGR_LOG(options_.logger, info, "DRA driver does not serve health, not watching it",
                 "pluginName", options_.driver_name, "endpoint", options_.endpoint, "err",
                 end.status);
    } else {
      DEVMGR_LOG(options_.logger, debug, "WatchResources health stream has ended", "pluginName",
                 options_.driver_name, "endpoint", options_.endpoint, "err", end.status,
                 "responses", end.responses);
    }
    bool quiet = false;
    {
      absl::MutexLock lock(&mu_);
      quiet = quiet_;
    }
    if (options_.on_stream_end && !quiet) options_.on_stream_end(end);
    absl::MutexLock lock(&mu_);
    if (unimplemented || stopping_) break;
    // The pause ends early when Stop comes.
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.retry_period);
    if (stopping_) break;
  }
  absl::MutexLock lock(&mu_);
  finished_ = true;
}

std::optional<HealthStreamEnd> HealthStream::RunOnce() {
  if (options_.service == kDraResourceHealthServiceV1alpha1) {
    ::v1alpha1::DRAResourceHealth::Stub stub(channel_);
    return ReadStream<::v1alpha1::DRAResourceHealth::Stub, ::v1alpha1::NodeWatchResourcesResponse>(
        stub);
  }
  healthapi::DRAResourceHealth::Stub stub(channel_);
  return ReadStream<healthapi::DRAResourceHealth::Stub, healthapi::NodeWatchResourcesResponse>(
      stub);
}

template <typename Stub, typename Response>
std::optional<HealthStreamEnd> HealthStream::ReadStream(Stub& stub) {
  HealthStreamEnd end;
  // No deadline: the stream lives until the driver or Stop ends it.
  grpc::ClientContext context;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return std::nullopt;
    context_ = &context;
    ++tries_;
  }
  DEVMGR_LOG(options_.logger, debug, "Attempting to start WatchResources health stream",
             "pluginName", options_.driver_name, "endpoint", options_.endpoint, "service",
             options_.service);
  // A driver that came back while the channel waits out its reconnect backoff is reached now,
  // not minutes later (its devices' health Unknown meanwhile). The stream then waits for the
  // connection until Stop cancels it.
  ReconnectIfServed(*channel_, options_.endpoint, context);
  auto reader = stub.NodeWatchResources(&context, {});
  Response response;
  while (reader->Read(&response)) {
    ++end.responses;
    if (!options_.on_response) continue;
    if constexpr (std::is_same_v<Response, healthapi::NodeWatchResourcesResponse>) {
      options_.on_response(response);
    } else {
      options_.on_response(ConvertVersion<healthapi::NodeWatchResourcesResponse>(response));
    }
  }
  end.status = FromGrpcStatus(reader->Finish());
  end.established = end.responses > 0 || !absl::IsUnavailable(end.status);
  absl::MutexLock lock(&mu_);
  context_ = nullptr;
  return end;
}

}  // namespace devmgr::dra
