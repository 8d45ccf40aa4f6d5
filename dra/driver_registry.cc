#include "dra/driver_registry.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/field_errors.h"
#include "common/go_quote.h"
#include "common/unix_socket.h"

namespace devmgr::dra {
namespace {

// GoQuotedList writes a list as Go's %q does: ["a" "b"].
std::string GoQuotedList(const std::vector<std::string>& items) {
  return absl::StrCat("[",
                      absl::StrJoin(items, " ",
                                    [](std::string* out, const std::string& s) {
                                      absl::StrAppend(out, GoQuote(s));
                                    }),
                      "]");
}

absl::Status InvalidVersions(absl::string_view driver_name, absl::string_view endpoint,
                             const absl::Status& reason) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid supported gRPC versions of DRA driver plugin ", driver_name,
                   " at endpoint ", endpoint, ": ", reason.message()));
}

// CheckNameAndEndpoint: the name and endpoint a driver's GetInfo gave, which any process that can
// create a socket in plugins_registry/ chooses, as upstream's DRA plugin manager checks them: a
// driver name as the API takes it (no other driver's name, nothing a path could be made of), and
// an absolute socket address.
absl::Status CheckNameAndEndpoint(absl::string_view driver_name, absl::string_view endpoint) {
  FieldErrors name_errors;
  CheckDriverName(name_errors, driver_name, "driverName");
  if (absl::Status name = name_errors.Result(); !name.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid DRA driver name ", GoQuote(driver_name), ": ", name.message()));
  }
  if (endpoint.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("empty DRA plugin endpoint for DRA driver ", driver_name));
  }
  if (!absl::StartsWith(endpoint, "/")) {
    return absl::InvalidArgumentError(
        absl::StrCat("DRA plugin endpoint ", GoQuote(endpoint), " must be an absolute path"));
  }
  if (endpoint.size() > kMaxUnixSocketPathBytes) {
    return absl::InvalidArgumentError(absl::StrCat("DRA plugin endpoint ", GoQuote(endpoint),
                                                   " is longer than ", kMaxUnixSocketPathBytes,
                                                   " bytes, the most a unix socket address holds"));
  }
  return absl::OkStatus();
}

// CheckPlugin: the service to speak to the driver, after the checks ValidatePlugin makes.
absl::StatusOr<std::string> CheckPlugin(absl::string_view driver_name, absl::string_view endpoint,
                                        const std::vector<std::string>& versions) {
  if (absl::Status checked = CheckNameAndEndpoint(driver_name, endpoint); !checked.ok()) {
    return checked;
  }
  absl::StatusOr<std::string> service = ChooseService(versions);
  if (!service.ok()) return InvalidVersions(driver_name, endpoint, service.status());
  if (absl::Status dialable = CheckDialable(std::string(endpoint)); !dialable.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid endpoint of DRA driver plugin ",
                                                   driver_name, ": ", dialable.message()));
  }
  return service;
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

DriverRegistry::DriverRegistry(DriverRegistryOptions options) : options_(std::move(options)) {
  if (options_.on_usable_change) monitor_ = std::make_unique<ConnectionMonitor>();
}

absl::Status DriverRegistry::ValidatePlugin(absl::string_view driver_name,
                                            absl::string_view endpoint,
                                            const std::vector<std::string>& versions) const {
  return CheckPlugin(driver_name, endpoint, versions).status();
}

absl::Status DriverRegistry::RegisterPlugin(absl::string_view driver_name,
                                            absl::string_view endpoint,
                                            const std::vector<std::string>& versions) {
  absl::StatusOr<std::string> service = CheckPlugin(driver_name, endpoint, versions);
  if (!service.ok()) return service.status();
  const std::string driver(driver_name);
  std::shared_ptr<const DriverClient> client;
  uint64_t serial = 0;
  {
    absl::MutexLock lock(&mu_);
    auto& endpoints = drivers_[driver];
    for (const Endpoint& registered : endpoints) {
      if (registered.client->endpoint() == endpoint) {
        return absl::AlreadyExistsError(absl::StrCat(
            "endpoint ", endpoint, " already registered for DRA driver plugin ", driver_name));
      }
    }
    client =
        std::make_shared<const DriverClient>(driver, std::string(endpoint), *std::move(service),
                                             options_.call_timeout, options_.metrics);
    serial = ++next_serial_;
    endpoints.push_back(Endpoint{
        .client = client, .health_service = PickHealthService(versions), .serial = serial});
    if (monitor_ != nullptr) Sync(driver);
  }
  SyncHealthStream(driver);
  if (monitor_ == nullptr) return absl::OkStatus();
  // Watched without the lock, which a report takes: one may come as soon as Watch is called.
  const uint64_t watch = monitor_->Watch(
      client->channel(), client->endpoint(),
      [this, driver, serial](bool ready) { ConnectionChanged(driver, serial, ready); });
  absl::MutexLock lock(&mu_);
  if (auto it = drivers_.find(driver_name); it != drivers_.end()) {
    for (Endpoint& registered : it->second) {
      if (registered.serial == serial) {
        registered.watch = watch;
        return absl::OkStatus();
      }
    }
  }
  monitor_->Unwatch(watch);  // deregistered meanwhile
  return absl::OkStatus();
}

void DriverRegistry::SyncHealthStream(const std::string& driver_name) {
  if (options_.health == nullptr) return;
  absl::MutexLock health_lock(&health_mu_);
  if (health_stopped_) return;
  // The driver's newest registration, when it streams health (serial 0: no stream is wanted).
  uint64_t serial = 0;
  std::string service;
  std::shared_ptr<const DriverClient> client;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = drivers_.find(driver_name); it != drivers_.end() && !it->second.empty()) {
      const Endpoint& newest = it->second.back();
      if (!newest.health_service.empty()) {
        serial = newest.serial;
        service = newest.health_service;
        client = newest.client;
      }
    }
  }
  if (auto current = health_streams_.find(driver_name); current != health_streams_.end()) {
    if (current->second.serial == serial) return;
    // Handed over to a newer registration, the health reported stays until that one reports:
    // the old stream ends quietly. With no stream to follow it, its end is reported, and the
    // driver's health goes with it.
    if (serial != 0) {
      current->second.stream->StopQuietly();
    } else {
      current->second.stream->Stop();
    }
    health_streams_.erase(current);
  }
  if (serial == 0) return;
  HealthStreamOptions stream;
  stream.driver_name = driver_name;
  stream.endpoint = client->endpoint();
  stream.channel = client->channel();
  stream.service = std::move(service);
  stream.retry_period = options_.health_retry_period;
  stream.on_response = [sink = options_.health,
                        driver_name](const healthapi::NodeWatchResourcesResponse& response) {
    sink->HealthReported(driver_name, response);
  };
  stream.on_stream_end = [sink = options_.health, driver_name](const HealthStreamEnd& end) {
    sink->HealthStreamEnded(driver_name, end);
  };
  health_streams_.emplace(
      driver_name, ActiveHealthStream{.serial = serial,
                                      .stream = std::make_unique<HealthStream>(std::move(stream))});
}

void DriverRegistry::ConnectionChanged(const std::string& driver_name, uint64_t serial,
                                       bool ready) {
  absl::MutexLock lock(&mu_);
  auto it = drivers_.find(driver_name);
  if (it == drivers_.end()) return;
  for (Endpoint& registered : it->second) {
    if (registered.serial == serial) {
      registered.connected = ready;
      Sync(driver_name);
      return;
    }
  }
}

void DriverRegistry::Sync(const std::string& driver_name) {
  bool usable = false;
  if (auto it = drivers_.find(driver_name); it != drivers_.end()) {
    for (const Endpoint& registered : it->second) usable = usable || registered.connected;
  }
  options_.on_usable_change(driver_name, usable);
}

DriverRegistry::~DriverRegistry() { StopHealthStreams(); }

void DriverRegistry::StopHealthStreams() {
  absl::MutexLock health_lock(&health_mu_);
  health_stopped_ = true;
  for (auto& [driver_name, active] : health_streams_) active.stream->StopQuietly();
  health_streams_.clear();
}

void DriverRegistry::DeRegisterPlugin(absl::string_view driver_name, absl::string_view endpoint) {
  // The client is released outside the lock: closing a channel may take a moment.
  std::shared_ptr<const DriverClient> removed;
  {
    absl::MutexLock lock(&mu_);
    auto it = drivers_.find(driver_name);
    if (it == drivers_.end()) return;
    auto& endpoints = it->second;
    auto found = std::find_if(endpoints.begin(), endpoints.end(), [&](const Endpoint& registered) {
      return registered.client->endpoint() == endpoint;
    });
    if (found == endpoints.end()) return;
    removed = std::move(found->client);
    if (found->watch != 0) monitor_->Unwatch(found->watch);
    endpoints.erase(found);
    if (endpoints.empty()) drivers_.erase(it);
    if (monitor_ != nullptr) Sync(std::string(driver_name));
  }
  SyncHealthStream(std::string(driver_name));
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
  for (auto registered = endpoints.rbegin(); registered != endpoints.rend(); ++registered) {
    if (registered->client->Connected()) return registered->client;
  }
  return endpoints.back().client;
}

}  // namespace devmgr::dra
