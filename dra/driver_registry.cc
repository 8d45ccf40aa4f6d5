#include "dra/driver_registry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace devmgr::dra {
namespace {

// GoQuotedList writes a list as Go's %q does: ["a" "b"].
std::string GoQuotedList(const std::vector<std::string>& items) {
  return absl::StrCat("[",
                      absl::StrJoin(items, " ",
                                    [](std::string* out, const std::string& s) {
                                      absl::StrAppend(out, "\"", s, "\"");
                                    }),
                      "]");
}

absl::Status InvalidVersions(absl::string_view driver_name, absl::string_view endpoint,
                             const absl::Status& reason) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid supported gRPC versions of DRA driver plugin ", driver_name,
                   " at endpoint ", endpoint, ": ", reason.message()));
}

}  // namespace

absl::StatusOr<std::string> ChooseService(const std::vector<std::string>& supported_versions) {
  if (supported_versions.empty()) {
    return absl::InvalidArgumentError(
        "empty list of supported gRPC services (aka supported versions)");
  }
  for (const std::string& service : supported_versions) {
    for (const absl::string_view known : kSupportedServices) {
      if (service == known) return service;
    }
  }
  const std::vector<std::string> ours(std::begin(kSupportedServices), std::end(kSupportedServices));
  return absl::InvalidArgumentError(
      absl::StrCat("none of services supported by the plugin (", GoQuotedList(supported_versions),
                   ") are supported by the kubelet (", GoQuotedList(ours), ")"));
}

absl::Status DriverRegistry::ValidatePlugin(absl::string_view driver_name,
                                            absl::string_view endpoint,
                                            const std::vector<std::string>& versions) const {
  absl::StatusOr<std::string> service = ChooseService(versions);
  if (!service.ok()) return InvalidVersions(driver_name, endpoint, service.status());
  return absl::OkStatus();
}

absl::Status DriverRegistry::RegisterPlugin(absl::string_view driver_name,
                                            absl::string_view endpoint,
                                            const std::vector<std::string>& versions) {
  absl::StatusOr<std::string> service = ChooseService(versions);
  if (!service.ok()) return InvalidVersions(driver_name, endpoint, service.status());
  absl::MutexLock lock(&mu_);
  auto& endpoints = drivers_[std::string(driver_name)];
  for (const auto& registered : endpoints) {
    if (registered->endpoint() == endpoint) {
      return absl::AlreadyExistsError(absl::StrCat(
          "endpoint ", endpoint, " already registered for DRA driver plugin ", driver_name));
    }
  }
  auto client =
      std::make_shared<const DriverClient>(std::string(driver_name), std::string(endpoint),
                                           *std::move(service), call_timeout_, metrics_);
  const std::string health_service = PickHealthService(versions);
  if (health_ != nullptr && !health_stopped_ && !health_service.empty()) {
    HealthStreamOptions options;
    options.driver_name = std::string(driver_name);
    options.endpoint = std::string(endpoint);
    options.channel = client->channel();
    options.service = health_service;
    options.retry_period = health_retry_period_;
    options.on_response = [sink = health_, driver = options.driver_name](
                              const healthapi::NodeWatchResourcesResponse& response) {
      sink->HealthReported(driver, response);
    };
    options.on_stream_end = [sink = health_,
                             driver = options.driver_name](const HealthStreamEnd& end) {
      sink->HealthStreamEnded(driver, end);
    };
    health_streams_[std::string(endpoint)] = std::make_unique<HealthStream>(std::move(options));
  }
  endpoints.push_back(std::move(client));
  return absl::OkStatus();
}

DriverRegistry::~DriverRegistry() { StopHealthStreams(); }

void DriverRegistry::StopHealthStreams() {
  std::map<std::string, std::unique_ptr<HealthStream>, std::less<>> streams;
  {
    absl::MutexLock lock(&mu_);
    health_stopped_ = true;
    streams.swap(health_streams_);
  }
  // Stopped outside the lock: a stream's last report may still be on its way to the sink.
  for (auto& [endpoint, stream] : streams) stream->Stop();
}

void DriverRegistry::DeRegisterPlugin(absl::string_view driver_name, absl::string_view endpoint) {
  // The client and its health stream are released outside the lock: closing a channel or
  // joining the stream's thread may take a moment.
  std::shared_ptr<const DriverClient> removed;
  std::unique_ptr<HealthStream> removed_stream;
  absl::MutexLock lock(&mu_);
  if (auto stream = health_streams_.find(endpoint); stream != health_streams_.end()) {
    removed_stream = std::move(stream->second);
    health_streams_.erase(stream);
  }
  auto it = drivers_.find(driver_name);
  if (it == drivers_.end()) return;
  auto& endpoints = it->second;
  auto found = std::find_if(endpoints.begin(), endpoints.end(),
                            [&](const auto& client) { return client->endpoint() == endpoint; });
  if (found == endpoints.end()) return;
  removed = std::move(*found);
  endpoints.erase(found);
  if (endpoints.empty()) drivers_.erase(it);
}

absl::StatusOr<std::shared_ptr<const DriverClient>> DriverRegistry::Get(
    absl::string_view driver_name) const {
  if (driver_name.empty()) return absl::InvalidArgumentError("DRA driver name is empty");
  absl::MutexLock lock(&mu_);
  auto it = drivers_.find(driver_name);
  if (it == drivers_.end() || it->second.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("DRA driver ", driver_name, " is not registered"));
  }
  const auto& endpoints = it->second;
  for (auto client = endpoints.rbegin(); client != endpoints.rend(); ++client) {
    if ((*client)->Connected()) return *client;
  }
  return endpoints.back();
}

}  // namespace devmgr::dra
